import { createHmac, createHash, hash, randomBytes } from 'node:crypto';
const key = randomBytes(32);
const text = 'eyJ2IjoxLCJtZXRob2QiOiJyZXRyaWV2ZSIsImZpbmdlcnByaW50IjoiYWJjZGVmZ2hpamtsbW5vcHFyc3R1diIsImV4cGlyZXNBdCI6MTc2NDYzNjgwMDAwMCwicG9zaXRpb24iOnsia2luZCI6ImZ1c2VkIiwiZW5naW5lcyI6WyJhIl0sImRlcHRoIjp7ImEiOjIwfSwic2VnbWVudCI6MCwib2Zmc2V0IjoxMH19';
const N=200000;
function bench(name, fn){ for(let i=0;i<20000;i++)fn(); const s=performance.now(); for(let i=0;i<N;i++)fn(); console.log(name.padEnd(30), ((performance.now()-s)*1000/N).toFixed(3),'µs'); }
const ipad = Buffer.alloc(64, 0x36), opad = Buffer.alloc(64, 0x5c);
for (let i=0;i<key.length;i++){ ipad[i]^=key[i]; opad[i]^=key[i]; }
function hmac2(text) {
  const inner = hash('sha256', Buffer.concat([ipad, Buffer.from(text, 'utf8')]), 'buffer');
  return hash('sha256', Buffer.concat([opad, inner]), 'buffer');
}
console.log(hmac2(text).equals(createHmac('sha256', key).update(text).digest()));
bench('createHmac', ()=>createHmac('sha256', key).update(text,'utf8').digest().subarray(0,16).toString('base64url'));
bench('hmac via 2 one-shot hashes', ()=>hmac2(text).subarray(0,16).toString('base64url'));
bench('createHash', ()=>createHash('sha256').update(text,'utf8').digest('base64url'));
bench('hash one-shot', ()=>hash('sha256', text, 'base64url'));
const scratch = Buffer.alloc(64 + 4096); ipad.copy(scratch, 0);
const outer = Buffer.alloc(96); opad.copy(outer, 0);
function hmac3(text) {
  const n = scratch.write(text, 64, 'utf8');
  const inner = hash('sha256', scratch.subarray(0, 64 + n), 'buffer');
  inner.copy(outer, 64);
  return hash('sha256', outer, 'buffer');
}
console.log(hmac3(text).equals(createHmac('sha256', key).update(text).digest()));
bench('hmac scratch', ()=>hmac3(text).subarray(0,16).toString('base64url'));
bench('hash of buffer', ()=>hash('sha256', scratch.subarray(0, 300), 'buffer'));
const innerBase = createHash('sha256').update(ipad); const outerBase = createHash('sha256').update(opad);
function hmac4(text) {
  const inner = innerBase.copy().update(text, 'utf8').digest();
  return outerBase.copy().update(inner).digest();
}
console.log(hmac4(text).equals(createHmac('sha256', key).update(text).digest()));
bench('hmac via Hash.copy', ()=>hmac4(text).subarray(0,16).toString('base64url'));
bench('hash one-shot latin1 str', ()=>hash('sha256', text, 'base64url'));
