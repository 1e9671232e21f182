/**
 * Costs of the password primitives on this machine: one argon2id hash and verify at the OWASP
 * setting, and the first (and only) load of the breached-password list.
 * Usage: npx tsx bench/passwords.ts   (run alone: the list load is measured cold, once per process)
 */
import { dummyVerify, hashPassword, verifyPassword } from '../infra/security/passwords';
import { preloadBreachedPasswords } from '../infra/security/breached-passwords';

const ms = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e6;

global.gc?.();
const heapBefore = process.memoryUsage().heapUsed;
let start = process.hrtime.bigint();
const size = preloadBreachedPasswords();
const loadMs = ms(start);
global.gc?.();
const heapMiB = (process.memoryUsage().heapUsed - heapBefore) / 2 ** 20;
console.log(
  `breached list: ${size} entries, first load ${loadMs.toFixed(0)} ms, heap +${heapMiB.toFixed(1)} MiB${global.gc ? '' : ' (run with --expose-gc for a settled figure)'}`,
);

const rounds = 20;
const hashes: string[] = [];
start = process.hrtime.bigint();
for (let i = 0; i < rounds; i++) hashes.push(await hashPassword(`bench password number ${i}`));
console.log(`argon2id hash (m=19456 KiB, t=2, p=1): ${(ms(start) / rounds).toFixed(1)} ms each`);
start = process.hrtime.bigint();
for (let i = 0; i < rounds; i++) await verifyPassword(hashes[i]!, `bench password number ${i}`);
console.log(`argon2id verify: ${(ms(start) / rounds).toFixed(1)} ms each`);
start = process.hrtime.bigint();
for (let i = 0; i < rounds; i++) await dummyVerify(`bench password number ${i}`);
console.log(`dummyVerify: ${(ms(start) / rounds).toFixed(1)} ms each`);
