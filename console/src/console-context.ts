import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Api } from './api/client';
import type { ConsoleSession, Permission } from './api/session';

/** The signed-in console: its client (which carries the key), what the key may see and do. */
export interface SignedIn {
  api: Api;
  session: ConsoleSession;
  signOut(): void;
}

export const SignedInContext = createContext<SignedIn | undefined>(undefined);

export function useSignedIn(): SignedIn {
  const signedIn = useContext(SignedInContext);
  if (!signedIn) throw new Error('useSignedIn outside a signed-in console');
  return signedIn;
}

export function useCan(permission: Permission): boolean {
  return useSignedIn().session.permissions.includes(permission);
}
