import { hash, verify } from '@node-rs/argon2';

// The service's parameters (src/crypto/passwords.ts) and the baseline's.
const PARAMS = { memoryCost: 19456, timeCost: 2, parallelism: 1 };

/**
 * CPU time of one Argon2id verify, measured in this process (all threads: the verify runs in the
 * libuv pool), median of `rounds` one at a time: what both login sides spend on the password alone.
 */
export async function argon2CpuMs(rounds = 15): Promise<number> {
  const stored = await hash('bench-password-for-timing', PARAMS);
  const samples: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const before = process.cpuUsage();
    await verify(stored, 'bench-password-for-timing');
    const used = process.cpuUsage(before);
    samples.push((used.user + used.system) / 1000);
  }
  return samples.sort((a, b) => a - b)[Math.floor(samples.length / 2)]!;
}
