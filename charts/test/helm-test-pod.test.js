// The `helm test` pod's script, rendered from the chart and run as the pod runs it (node -e, the URLs
// as arguments) against a real server: a connection refused right after an install is tried again
// (up to 30 s, not waited for here); any answer but a 200, and a bad URL, fail at once.
import { test, before } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { createServer } from 'node:http'
import { once } from 'node:events'
import { join } from 'node:path'
import { freePort } from '@suite/kit/testing'
import { charts, parse, requireTools, template } from './lib.js'

before(requireTools)

const script = () => parse(template(join(charts, 'service'), ['--show-only', 'templates/helm-test.yaml']))[0]
  .spec.containers[0].command
const runPod = (urls) => new Promise((resolve) => {
  const [node, flag, code] = script()
  assert.deepEqual([node, flag], ['node', '-e'])
  const child = spawn(process.execPath, ['--input-type=module', '-e', code, ...urls], {
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let out = ''
  child.stdout.on('data', (d) => { out += d })
  child.stderr.on('data', (d) => { out += d })
  const started = Date.now()
  child.on('close', (code) => resolve({ code, out, ms: Date.now() - started }))
})

test('helm test pod: refused until the service listens, then 200s pass; a 503 or a bad URL fails at once', async () => {
  const port = await freePort()
  const server = createServer((req, res) => { res.statusCode = req.url === '/down' ? 503 : 200; res.end('{}') })
  const late = setTimeout(() => server.listen(port, '127.0.0.1'), 2500)
  try {
    const first = await runPod([`http://127.0.0.1:${port}/readyz`, `http://127.0.0.1:${port}/flows?hour=0`])
    assert.equal(first.code, 0, first.out)
    assert.match(first.out, /no answer .* ECONNREFUSED/)
    assert.match(first.out, /200 http:\/\/127\.0\.0\.1:\d+\/flows\?hour=0/)
    const down = await runPod([`http://127.0.0.1:${port}/readyz`, `http://127.0.0.1:${port}/down`])
    assert.equal(down.code, 1, down.out)
    assert.match(down.out, /503 http/)
    const bad = await runPod(['http://[bad'])
    assert.equal(bad.code, 1, bad.out)
    assert.ok(bad.ms < 5000, `a bad URL fails at once, not after the retries (${bad.ms} ms)`)
  } finally {
    clearTimeout(late)
    if (server.listening) { server.close(); await once(server, 'close') }
  }
})
