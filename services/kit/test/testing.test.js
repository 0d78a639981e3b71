// The test helpers' own promises that other tests lean on.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { once } from 'node:events'
import { freePortBlock } from '@suite/kit/testing'

test('freePortBlock: every port of the block is free, and none lies in the ephemeral range clients and listen(0) draw from', async () => {
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
