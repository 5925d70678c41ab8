/** The console's entry: mounts the app (app.tsx) on #app. */
import { render } from 'preact';
import { App } from './app.js';

render(<App />, document.getElementById('app') as HTMLElement);
