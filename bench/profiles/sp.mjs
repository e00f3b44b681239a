const N = 2000000;
function run(name, f) { for (let i=0;i<50000;i++) f(i); const s=performance.now(); for (let i=0;i<N;i++) f(i); console.log(name.padEnd(34), ((performance.now()-s)*1000/N).toFixed(3), 'µs'); }
const base = { method: 'retrieve', params: { q: 1 }, deadlineAt: 5, signal: undefined, headers: {}, onProgress: undefined };
run('literal w/ cond spread (true)', (i) => ({ a: i, b: 2, ...(i >= 0 ? { x: i } : {}) }));
run('literal w/ cond spread (false)', (i) => ({ a: i, b: 2, ...(i < 0 ? { x: i } : {}) }));
run('literal w/ 2 cond spreads', (i) => ({ a: i, b: 2, ...(i >= 0 ? { x: i } : {}), ...(i < 0 ? { y: i } : {}) }));
run('cond assign', (i) => { const o = { a: i, b: 2 }; if (i >= 0) o.x = i; return o; });
run('spread existing keys', (i) => ({ ...base, params: { q: i }, deadlineAt: i }));
run('spread + new key', (i) => ({ ...base, expiresAt: i }));
run('Object.assign + new key', (i) => { const o = Object.assign({}, base); o.expiresAt = i; return o; });
run('spread after literal keys', (i) => ({ expiresAt: i, ...base }));
