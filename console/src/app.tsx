import { LocationProvider, Route, Router } from 'preact-iso';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { apiClient } from './api/client';
import { fetchSession, forgetKey, storedKey, storeKey, type ConsoleSession } from './api/session';
import { SignedInContext, type SignedIn } from './console-context';
import { Layout } from './components/layout';
import { SignIn } from './views/sign-in';
import { SpacePicker } from './views/space-picker';
import { Overview } from './views/overview';
import { Mailboxes } from './views/mailboxes';
import { Tasks } from './views/tasks';
import { TaskPage } from './views/task-page';
import { LiveEvents } from './views/live-events';
import { Budgets } from './views/budgets';
import { BudgetPage } from './views/budget-page';
import { Allowances } from './views/allowances';
import { AllowancePage } from './views/allowance-page';
import { Pools } from './views/pools';
import { Claims } from './views/claims';
import { Destinations } from './views/destinations';
import { NotFound } from './views/not-found';
import { TaskGroups } from './views/task-groups';
import { TaskGroupPage } from './views/task-group-page';
import { BarriersAndTimers } from './views/barriers';
import { RunFinder, RunPage } from './views/run-page';
import { OperatorConsole } from './views/operator';

export const spacePath = '/console/spaces/:spaceId';

export function App() {
  // The operator view signs in with the operator token, not an API key: a console of its own.
  if (location.pathname.startsWith('/console/operator')) return <OperatorConsole />;
  return <KeyConsole />;
}

function KeyConsole() {
  const [key, setKey] = useState<string | undefined>(() => storedKey());
  const [session, setSession] = useState<ConsoleSession | undefined>(undefined);
  const [failure, setFailure] = useState<string | undefined>(undefined);

  // A key kept from earlier in this tab (a reload) is checked again before anything is shown.
  useEffect(() => {
    if (!key || session) return;
    fetchSession(key).then(setSession, (error: Error) => {
      forgetKey();
      setKey(undefined);
      setFailure(error.message);
    });
  }, [key, session]);

  const signedIn = useMemo<SignedIn | undefined>(() => {
    if (!key || !session) return undefined;
    return {
      api: apiClient(key),
      session,
      signOut: () => {
        forgetKey();
        setSession(undefined);
        setKey(undefined);
      },
    };
  }, [key, session]);

  const signIn = async (given: string): Promise<void> => {
    const found = await fetchSession(given);
    storeKey(given);
    setFailure(undefined);
    setKey(given);
    setSession(found);
  };

  if (!signedIn) {
    if (key && !failure) return <p class="loading">Checking the key…</p>;
    return <SignIn onSignIn={signIn} failure={failure} />;
  }
  return (
    <SignedInContext.Provider value={signedIn}>
      <LocationProvider scope="/console">
        <Layout>
          <Router>
            <Route path="/console" component={SpacePicker} />
            <Route path="/console/" component={SpacePicker} />
            <Route path={spacePath} component={Overview} />
            <Route path={`${spacePath}/mailboxes`} component={Mailboxes} />
            <Route path={`${spacePath}/tasks`} component={Tasks} />
            <Route path={`${spacePath}/tasks/:taskId`} component={TaskPage} />
            <Route path={`${spacePath}/events`} component={LiveEvents} />
            <Route path={`${spacePath}/runs`} component={RunFinder} />
            <Route path={`${spacePath}/runs/:scopeId`} component={RunPage} />
            <Route path={`${spacePath}/task-groups`} component={TaskGroups} />
            <Route path={`${spacePath}/task-groups/:groupId`} component={TaskGroupPage} />
            <Route path={`${spacePath}/barriers`} component={BarriersAndTimers} />
            <Route path={`${spacePath}/budgets`} component={Budgets} />
            <Route path={`${spacePath}/budgets/:budgetId`} component={BudgetPage} />
            <Route path={`${spacePath}/allowances`} component={Allowances} />
            <Route path={`${spacePath}/allowances/:allowanceId`} component={AllowancePage} />
            <Route path={`${spacePath}/pools`} component={Pools} />
            <Route path={`${spacePath}/claims`} component={Claims} />
            <Route path={`${spacePath}/destinations`} component={Destinations} />
            <Route default component={NotFound} />
          </Router>
        </Layout>
      </LocationProvider>
    </SignedInContext.Provider>
  );
}
