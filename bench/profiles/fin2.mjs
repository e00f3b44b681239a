import { fuse } from '../../dist/core/federation/fusion/fuse.js';
import { cannedHits } from '../lib/canned-hits.js';
const text = JSON.stringify({ hits: cannedHits(0, 20) });
const lists = [{engine:'a', weight:1, hits: JSON.parse(text).hits}];
const N = 300000;
const s=performance.now(); for (let i=0;i<N;i++) fuse(lists, 'rrf', {k:10, rrfK:60, dedup:'id'}); console.log('fuse only', ((performance.now()-s)*1000/N).toFixed(2), 'µs');
