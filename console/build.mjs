// Build the console into dist/: the ES module app.js, uPlot's chunk (loaded by the first
// chart), one stylesheet (app.css, uPlot's included) and index.html. No network: everything comes from node_modules,
// installed by `npm ci` from package-lock.json. docketd embeds dist/ (console/embed.c).
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, 'dist');
rmSync(dist, { recursive: true, force: true });
mkdirSync(dist);
await build({
  entryPoints: { app: join(here, 'src/main.js'), 'app-style': join(here, 'src/app.css') },
  outdir: dist,
  bundle: true,
  format: 'esm',
  minify: true,
  target: ['es2020'],
  legalComments: 'none',
  logLevel: 'warning',
  entryNames: '[name]',
  splitting: true, // uPlot in a chunk of its own, loaded when a chart is drawn
  chunkNames: 'chunk-[hash]',
});
// esbuild names the CSS entry app-style.css: the page links app.css
copyFileSync(join(dist, 'app-style.css'), join(dist, 'app.css'));
rmSync(join(dist, 'app-style.css'));
rmSync(join(dist, 'app-style.js'), { force: true });
copyFileSync(join(here, 'src/index.html'), join(dist, 'index.html'));
console.log('console built into', dist);
