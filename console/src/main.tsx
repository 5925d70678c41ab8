/** The console's entry: its styles, then the app (app.tsx) mounted on #app. */
import { render } from 'preact';
import { App } from './app.js';
import './app.css';

render(<App />, document.getElementById('app') as HTMLElement);
