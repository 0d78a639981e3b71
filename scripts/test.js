// `npm test`: starts one throwaway PostgreSQL and one Redis for the whole run, then runs every
// workspace's node:test files against them. Each test file makes its own database
// (TEST_PG.createDatabase) so files can run in parallel; tests that crash Redis start their own.
import { spawn } from 'node:child_process'
import { homedir } from 'node:os'
import { delimiter } from 'node:path'
import { startPostgres, startRedis } from '@suite/kit/testing'

const patterns = process.argv.slice(2)
const files = patterns.length ? patterns : ['services/*/test/**/*.test.js', 'scripts/*.test.js', 'charts/test/*.test.js', 'loadtests/test/*.test.js']
// The Go tools (helm, kubeconform, vegeta…) that scripts/tools.sh installs, found without a PATH change.
const tools = `${process.env.SUITE_TOOLS ?? `${homedir()}/.cache/suite-tools`}/go-bin`

let pgServer, redis
try {
  pgServer = await startPostgres()
  redis = await startRedis()
} catch (err) {
  console.error(`npm test: ${err.message}`)
  await pgServer?.stop()
  process.exit(1)
}

const child = spawn(process.execPath, ['--test', '--test-concurrency=2', '--test-timeout=120000', '--test-force-exit', ...files], {
  stdio: 'inherit',
  env: { ...process.env, PATH: `${tools}${delimiter}${process.env.PATH}`, TEST_DATABASE_URL: pgServer.url, TEST_REDIS_URL: redis.url }
})
const code = await new Promise((resolve) => child.on('exit', (c, s) => resolve(c ?? (s ? 1 : 0))))
await Promise.allSettled([pgServer.stop(), redis.stop()])
process.exit(code)
