import { useSignedIn } from '../console-context';
import { PageTitle } from '../components/ui';

export function SpacePicker() {
  const { session } = useSignedIn();
  return (
    <section>
      <PageTitle>Spaces</PageTitle>
      <p>
        Organization {session.org.name} on plan {session.org.plan}. This key may use {session.spaces.length === 1 ? 'one space' : `${session.spaces.length} spaces`}
        ; its permissions: {session.permissions.join(', ')}.
      </p>
      <ul class="space-list">
        {session.spaces.map((space) => (
          <li key={space.id}>
            <a href={`/console/spaces/${space.id}`}>{space.name}</a> <code>{space.id}</code>
          </li>
        ))}
      </ul>
    </section>
  );
}
