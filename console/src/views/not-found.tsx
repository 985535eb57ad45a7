export function NotFound() {
  return (
    <section>
      <h1>Not here</h1>
      <p>
        No console page has this address. <a href="/console">Back to the spaces</a>.
      </p>
    </section>
  );
}
