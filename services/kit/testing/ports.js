// Free loopback ports for the servers and services a test starts.
import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'

export async function freePort () {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.unref()
    srv.on('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address()
      srv.close(() => resolve(port))
    })
  })
}

/**
 * A base port with `base + offset` free for every offset (npm start moves its services' ports by
 * PORT as a whole), chosen below the kernel's ephemeral range. listen(0) and outgoing connections take
 * their ports from that range (Linux's connect() prefers its even ones, so base + 1 after a listen(0)
 * base is just where a client's source port lands): a command that binds its block seconds later, as
 * npm start does after PGlite and its samples, would find one of them taken now and then.
 */
export async function freePortBlock (offsets = [0]) {
  const low = ephemeralLow()
  const span = Math.max(...offsets) + 1
  for (let tries = 0; tries < 200; tries++) {
    const base = 10_000 + Math.floor(Math.random() * (low - 10_000 - span))
    const servers = offsets.map((o) => createServer().listen(base + o, '0.0.0.0'))
    const bound = await Promise.all(servers.map((srv) => new Promise((resolve) => {
      srv.once('listening', () => resolve(true))
      srv.once('error', () => resolve(false))
    })))
    await Promise.all(servers.filter((srv, i) => bound[i]).map((srv) => new Promise((resolve) => srv.close(resolve))))
    if (bound.every(Boolean)) return base
  }
  throw new Error(`no block of free ports ${offsets.join(', ')} below ${low}`)
}

// The first port of the ephemeral range (Linux /proc/sys/net/ipv4/ip_local_port_range; 32768 elsewhere).
function ephemeralLow () {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || 32_768
  } catch {
    return 32_768
  }
}
