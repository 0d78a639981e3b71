// The test helpers' own promises that other tests lean on.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync, writeFileSync, mkdtempSync, rmSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createServer } from 'node:net'
import { once } from 'node:events'
import { spawn } from 'node:child_process'
import { createServer as createHttpServer } from 'node:http'
import { freePortBlock, cpuSeconds, childrenOf, startService, get } from '@suite/kit/testing'
import { waitFor } from '../testing/wait.js'

test('freePortBlock: every port of the block is free, ' +
  'and none lies in the ephemeral range clients and listen(0) draw from', async () => {
  const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number)
  const offsets = [0, 1, 2, 3]
  for (let i = 0; i < 20; i++) {
    const base = await freePortBlock(offsets)
    assert.ok(base >= 1024 && base + 3 < low, `${base}…${base + 3} below ${low}`)
    const servers = offsets.map((o) => createServer().listen(base + o, '127.0.0.1'))
    await Promise.all(servers.map((s) => once(s, 'listening')))
    await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))))
  }
})

test('startService: a port another process holds is never taken for the child\'s ' +
  '(its readiness answered by that process)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'suite-port-test-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  const entry = join(dir, 'server.js')
  writeFileSync(
    entry,
    "require('node:http').createServer((req, res) => res.end('child'))" +
    ".listen(Number(process.env.PORT), '127.0.0.1')"
  )
  // Another process's server on the port, ready at /readyz: the child cannot bind it.
  const other = createHttpServer((req, res) => res.end('another'))
  other.listen(0, '127.0.0.1')
  await once(other, 'listening')
  t.after(() => other.close())
  const { port } = other.address()
  await assert.rejects(startService({ entry, port, timeoutMs: 10_000 }), /port \d+ was taken by another process/)
  // A port chosen for it: the child's own.
  const mine = await startService({ entry })
  t.after(() => mine.stop())
  assert.equal((await get(mine.url, '/readyz')).body, 'child')
})

test('cpuSeconds: a process\'s CPU time, and with children that of its child processes too, ' +
  'live or ended', async () => {
  // A parent that starts a child spinning until it has used 400 ms of CPU (not of the clock: a busy
  // machine gives it less than all of a core), then ending; the parent reaps it and waits to be killed.
  const spin = 'const used = () => { const u = process.cpuUsage(); return u.user + u.system }; while (used() < 4e5);'
  const script = `require('child_process').spawn(process.execPath, ['-e', ${JSON.stringify(spin)}], ` +
    "{ stdio: 'inherit' }); setInterval(() => {}, 1000)"
  const parent = spawn(process.execPath, ['-e', script], { stdio: 'ignore' })
  const childrens = () => cpuSeconds(parent.pid, { children: true }) - cpuSeconds(parent.pid)
  try {
    await waitFor('the child\'s 400 ms of CPU counted with children', () => childrens() >= 0.3)
    await waitFor('the child ended and reaped', () => childrenOf(parent.pid).length === 0)
    assert.ok(childrens() >= 0.3, `the ended child's CPU still counted: ${childrens()} s`)
    assert.ok(cpuSeconds(parent.pid) < 0.3, `the parent alone: ${cpuSeconds(parent.pid)} s`)
  } finally {
    for (const pid of childrenOf(parent.pid)) process.kill(pid, 'SIGKILL')
    parent.kill('SIGKILL')
  }
})

test('startService with memoryLimitMb: the process runs in a memory cgroup of that limit from its start, ' +
  'removed at stop', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'suite-cgroup-test-'))
  const entry = join(dir, 'server.js')
  // Answers with the limit Node saw when it started, which is what it sizes V8's heap from.
  writeFileSync(
    entry,
    "require('node:http').createServer((q, s) => s.end(String(process.constrainedMemory())))" +
    ".listen(Number(process.env.PORT), '127.0.0.1')\n"
  )
  try {
    const svc = await startService({ entry, memoryLimitMb: 320 })
    const cgroupOf = () => readFileSync(`/proc/${svc.child.pid}/cgroup`, 'utf8')
    if (!svc.memoryLimited) {
      await svc.stop()
      return t.skip('no memory cgroup can be made on this machine (root and cgroup v1 memory or v2 are needed)')
    }
    const path = /suite-test-\d+-\d+/.exec(cgroupOf())?.[0]
    assert.ok(path, cgroupOf())
    assert.equal(Number((await get(svc.url, '/')).body), 320 * 2 ** 20)
    await svc.stop()
    assert.ok(!['/sys/fs/cgroup/memory', '/sys/fs/cgroup'].some((p) => existsSync(join(p, path))), `${path} removed`)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
