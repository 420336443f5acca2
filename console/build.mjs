// Build the console into dist/: the ES module app.js, uPlot's chunk (loaded by the first
// chart), one stylesheet (app.css, uPlot's included) and index.html, with boot.js inlined
// in it (the first screen's reads, sent while the page is parsed; docketd's CSP allows
// that one script by its hash, src/controller/console.c). No network: everything comes from node_modules,
// installed by `npm ci` from package-lock.json. docketd embeds dist/ (console/embed.c).
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
const boot = await build({
  entryPoints: [join(here, 'src/boot.js')], bundle: true, format: 'iife', minify: true, target: ['es2020'],
  legalComments: 'none', logLevel: 'warning', write: false,
});
const html = readFileSync(join(here, 'src/index.html'), 'utf8');
if (!html.includes('<!--boot.js-->')) throw new Error('index.html has no <!--boot.js--> to inline boot.js at');
// (no "</script" can be in it: esbuild writes one in a string as "<\/script")
writeFileSync(join(dist, 'index.html'), html.replace('<!--boot.js-->', () => `<script>${boot.outputFiles[0].text.trim()}</script>`));
console.log('console built into', dist);
