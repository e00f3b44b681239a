import { cannedHits } from '../lib/canned-hits.js';
const hits = JSON.parse(JSON.stringify({ hits: cannedHits(0, 20) })).hits;
const N = 2000000;
function run(name, f) { for (let i=0;i<50000;i++) f(hits[i%20], i); const s=performance.now(); for (let i=0;i<N;i++) f(hits[i%20], i); console.log(name.padEnd(12), ((performance.now()-s)*1000/N).toFixed(3), 'µs'); }
run('spread', (hit, i) => { const meta = { ...hit.meta }; meta.engine='a'; meta.bodyEngine='a'; meta.engineRank=i; meta.engineScore=hit.score; meta.fusedScore=0.1; return { ...hit, score: 0.1, meta }; });
run('spreadonly', (hit, i) => { return { ...hit }; });
run('forin', (hit, i) => { const meta = {}; const src = hit.meta; if (src) for (const k in src) meta[k]=src[k]; meta.engine='a'; meta.bodyEngine='a'; meta.engineRank=i; meta.engineScore=hit.score; meta.fusedScore=0.1;
  const out = {}; for (const k in hit) out[k] = hit[k]; out.score = 0.1; out.meta = meta; return out; });
run('assign', (hit, i) => { const meta = Object.assign({}, hit.meta); meta.engine='a'; meta.bodyEngine='a'; meta.engineRank=i; meta.engineScore=hit.score; meta.fusedScore=0.1; const out = Object.assign({}, hit); out.score=0.1; out.meta=meta; return out; });
run('literalmeta', (hit, i) => { const src = hit.meta; const meta = src ? { ...src, engine:'a', bodyEngine:'a', engineRank:i, engineScore:hit.score, fusedScore:0.1 } : { engine:'a', bodyEngine:'a', engineRank:i, engineScore:hit.score, fusedScore:0.1 }; return { ...hit, score: 0.1, meta }; });
run('clone+set', (hit, i) => { const src = hit.meta; const meta = src ? { ...src } : {}; meta.engine='a'; meta.bodyEngine='a'; meta.engineRank=i; meta.engineScore=hit.score; meta.fusedScore=0.1; const out = { ...hit }; out.score = 0.1; out.meta = meta; return out; });
run('clone+set(meta literal)', (hit, i) => { const src = hit.meta; const meta = src ? { ...src } : {}; meta.engine='a'; meta.bodyEngine='a'; meta.engineRank=i; meta.engineScore=hit.score; meta.fusedScore=0.1; const out = { ...hit }; out.score = 0.1; out.meta = meta; return out; });
run('clone+add', (hit, i) => { const out = { ...hit }; out.meta = i; return out; });
run('clone+store', (hit, i) => { const out = { ...hit }; out.score = i; return out; });
run('metaonly', (hit, i) => { const meta = {}; meta.engine='a'; meta.bodyEngine='a'; meta.engineRank=i; meta.engineScore=hit.score; meta.fusedScore=0.1; return meta; });
const lits = hits.map(h => ({ id: h.id, score: h.score, text: h.text, citation: h.citation }));
function run2(name, f) { for (let i=0;i<50000;i++) f(lits[i%20], i); const s=performance.now(); for (let i=0;i<N;i++) f(lits[i%20], i); console.log(name.padEnd(12), ((performance.now()-s)*1000/N).toFixed(3), 'µs'); }
run2('lit clone+add', (hit, i) => { const out = { ...hit }; out.meta = i; return out; });
run2('lit spread+new', (hit, i) => ({ ...hit, meta: i }));
run2('lit spread+exist', (hit, i) => ({ ...hit, score: i }));
run2('assign3', (hit, i) => Object.assign({}, hit, { meta: i }));
run2('assign+set', (hit, i) => { const o = Object.assign({}, hit); o.meta = i; return o; });
run2('empty spread+new', (hit, i) => ({ ...{}, meta: i, x: 1 }));
run2('spread 2 objs', (hit, i) => ({ ...hit, ...{ meta: i } }));
