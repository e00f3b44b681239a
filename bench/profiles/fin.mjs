import { fuse } from '../../dist/core/federation/fusion/fuse.js';
import { cannedHits } from '../lib/canned-hits.js';
const text = JSON.stringify({ hits: cannedHits(0, 20) });
const N = 100000;
function run(name, f) { for (let i=0;i<5000;i++) f(); const s=performance.now(); for (let i=0;i<N;i++) f(); console.log(name, ((performance.now()-s)*1000/N).toFixed(2), 'µs'); }
run('parse', () => JSON.parse(text));
run('parse+fuse1', () => { const r = JSON.parse(text); return fuse([{engine:'a', weight:1, hits:r.hits}], 'rrf', {k:10, rrfK:60, dedup:'id'}); });
run('parse+fuse1+stringify', () => { const r = JSON.parse(text); return JSON.stringify(fuse([{engine:'a', weight:1, hits:r.hits}], 'rrf', {k:10, rrfK:60, dedup:'id'}).hits); });
