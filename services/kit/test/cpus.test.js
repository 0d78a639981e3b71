// WORKERS follows the CPUs a process may use: a real cgroup with a CPU quota (a container's CPU
// limit) around a real process. Needs root and a writable cgroup cpu controller (v1 here; v2 has the
// same code path through cpu.max): where there is none, the test says so and fails rather than pass
// untested.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, rmdirSync, writeFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { randomBytes } from 'node:crypto'

const config = new URL('../src/config/config.js', import.meta.url).href
const cpusModule = new URL('../src/config/cpus.js', import.meta.url).href
// Prints [quota, default WORKERS] as the process sees them, from inside `cgroup` (null: where it is).
const probeScript = `import { loadConfig } from '${config}'; import { cpuQuota } from '${cpusModule}';\n` +
  '  const { WORKERS, ...env } = process.env; ' +
  "console.log(JSON.stringify([cpuQuota(), loadConfig({}, { ...env, DATABASE_URL: 'postgres://h/d' }).WORKERS]))"
const probe = (cgroup) => JSON.parse(execFileSync('sh', [
  '-c', `${cgroup ? `echo $$ > ${cgroup}/tasks && ` : ''}exec "$0" --input-type=module -e "$1"`,
  process.execPath, probeScript
], { encoding: 'utf8' }))

test('default WORKERS: the cgroup CPU quota rounded down (at least 1), ' +
  'else the CPUs the process may run on', (t) => {
  const v1 = '/sys/fs/cgroup/cpu'
  const v2 = existsSync('/sys/fs/cgroup/cgroup.controllers') ? '/sys/fs/cgroup' : null
  assert.ok(
    process.getuid() === 0 && (existsSync(`${v1}/cpu.cfs_quota_us`) || v2),
    'needs root and a cgroup cpu controller'
  )
  assert.deepEqual(probe(null), [null, availableParallelism()], 'no quota: the CPUs it may run on')
  const dir = `${v2 ?? v1}/suite-test-${randomBytes(4).toString('hex')}`
  mkdirSync(dir)
  t.after(() => rmdirSync(dir))
  const quota = (cpus) => v2
    ? writeFileSync(`${dir}/cpu.max`, `${Math.round(cpus * 100000)} 100000`)
    : (writeFileSync(`${dir}/cpu.cfs_period_us`, '100000'),
      writeFileSync(`${dir}/cpu.cfs_quota_us`, String(Math.round(cpus * 100000))))
  for (const [cpus, workers] of [
    [0.5, 1], [1, 1], [1.5, 1], [2, Math.min(2, availableParallelism())], [64, availableParallelism()]
  ]) {
    quota(cpus)
    assert.deepEqual(probe(dir), [cpus, workers], `a quota of ${cpus} CPUs`)
  }
})
