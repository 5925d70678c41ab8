/** Placeholder while the pages are built. */
export function App() {
  return <main><h1>Tributary</h1></main>;
}
