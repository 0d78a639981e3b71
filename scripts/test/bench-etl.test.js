// `npm run bench:etl` at a small --size runs to its end and leaves no PostgreSQL server behind.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { randomBytes } from 'node:crypto'
import { processesWithEnv } from '@suite/kit/testing'

test('bench:etl --size: the table of steps and the load against PostgreSQL\'s own COPY, exit 0, ' +
  'and its PostgreSQL stopped', async () => {
  const marker = randomBytes(8).toString('hex') // inherited by the PostgreSQL server it starts
  const child = spawn(process.execPath, [
    fileURLToPath(new URL('../bench-etl.js', import.meta.url)), '--service', 'profile', '--size', '2000'
  ], {
    env: { ...process.env, SUITE_TEST_MARKER: marker },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let out = ''
  child.stdout.on('data', (d) => { out += d })
  child.stderr.on('data', (d) => { out += d })
  const [code] = await new Promise((resolve) => child.on('exit', (...a) => resolve(a)))
  try {
    assert.equal(code, 0, out)
    assert.match(out, /\| load \(the CSV files\) \| [\d.]+ s \|/)
    assert.match(out, /\| PostgreSQL's own COPY \([\d.]+ s\) \+ indexes and ANALYZE \([\d.]+ s\) \| [\d.]+ s \|/)
    assert.match(out, /\| load \/ COPY \| [\d.]+× \|/)
    assert.deepEqual(processesWithEnv('SUITE_TEST_MARKER', marker), [], 'no PostgreSQL left running')
  } finally {
    for (const pid of processesWithEnv('SUITE_TEST_MARKER', marker)) process.kill(pid, 'SIGKILL')
  }
})
