// A service run as a real child process, optionally in a memory cgroup as in its pod.
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, rmdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { freePort } from './ports.js'
import { collect, exited, listensOn } from './processes.js'
import { waitFor } from './wait.js'
import { databaseEnv } from './servers.js'

let cgroups = 0
/**
 * A memory cgroup limited to `limitMb`, as a pod's container gets: the kernel holds the process to it,
 * and Node sizes its V8 heap from it (a small limit gives a small old generation and semi-space, where
 * a big machine gives big ones), so memory is measured as in the pod.
 * cgroup v1's memory controller or cgroup v2, as root; null where neither can be made.
 * Returns { dir, remove() }.
 */
function memoryCgroup (limitMb) {
  const bytes = String(limitMb * 2 ** 20)
  const name = `suite-test-${process.pid}-${++cgroups}`
  // [where, the limit's file, a file only that hierarchy has]: on a cgroup v1 machine /sys/fs/cgroup is
  // a tmpfs, where mkdir and a write would make a plain folder and file, and limit nothing.
  for (const [parent, file, mark] of [
    ['/sys/fs/cgroup/memory', 'memory.limit_in_bytes', 'memory.limit_in_bytes'],
    ['/sys/fs/cgroup', 'memory.max', 'cgroup.subtree_control']
  ]) {
    if (!existsSync(join(parent, mark))) continue
    const dir = join(parent, name)
    try {
      mkdirSync(dir)
      writeFileSync(join(dir, file), bytes)
      return { dir, remove: () => { try { rmdirSync(dir) } catch {} } } // emptied by the exit just before
    } catch {
      try { rmdirSync(dir) } catch {}
    }
  }
  return null
}

/**
 * Runs `node ...nodeArgs <entry> ...args` as a child process with `env` added, and waits until
 * GET <url>/readyz is 200. A password in env.DATABASE_URL is passed apart, in DATABASE_PASSWORD (see
 * databaseEnv). `memoryLimitMb`: the process runs in a memory cgroup of that limit, as in a pod (see
 * memoryCgroup), or, where none can be made, without one (`memoryLimited` says which).
 * Returns { url, port, child, memoryLimited, logs(), stop(signal) } where stop resolves with { code, signal }.
 */
export async function startService (options) {
  // A free port chosen here can be taken before the child binds it (by another test's server): then
  // the child fails to listen, and the same start again on another port.
  for (let tries = 1; ; tries++) {
    try {
      return await startOnce({ ...options, port: options.port ?? await freePort() })
    } catch (err) {
      if (!(err instanceof PortTaken) || options.port !== undefined || tries === 3) throw err
    }
  }
}
class PortTaken extends Error {}

async function startOnce ({
  entry, args = [], nodeArgs = [], env = {}, port, memoryLimitMb, readyPath = '/readyz', timeoutMs = 30_000
}) {
  const cgroup = memoryLimitMb ? memoryCgroup(memoryLimitMb) : null
  // In the cgroup from its first instruction: Node reads the limit once, when it sizes the heap. The
  // shell's pid is node's (exec).
  const command = [process.execPath, ...nodeArgs, entry, ...args]
  const argv = cgroup ? ['-c', 'echo $$ > "$0/cgroup.procs" && exec "$@"', cgroup.dir, ...command] : command.slice(1)
  const child = spawn(cgroup ? 'sh' : command[0], argv, {
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: String(port),
      LOG_LEVEL: 'warn',
      // A shared test machine stalls at times: no load shedding or connect timeout unless a test asks.
      PG_CONNECT_TIMEOUT_MS: '10000',
      MAX_EVENT_LOOP_DELAY_MS: '0',
      MAX_EVENT_LOOP_UTILIZATION: '0',
      ...env,
      ...(env.DATABASE_URL && !env.DATABASE_PASSWORD && databaseEnv(env.DATABASE_URL))
    },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const logs = collect(child)
  const url = `http://127.0.0.1:${port}`
  try {
    const ready = await waitFor(`service ${entry}`, async () => {
      if (child.exitCode !== null) throw new Error(`service exited with ${child.exitCode}: ${logs()}`)
      const res = await fetch(url + readyPath)
      // Ready, but is it the child? Another process may hold the port (the child then fails to bind).
      return res.status === 200 && (listensOn(child.pid, port) === false ? 'another process' : 'the child')
    }, { timeoutMs })
    if (ready === 'another process') throw new PortTaken(`port ${port} was taken by another process`)
  } catch (err) {
    // Never ready (a machine too busy, say): the test fails, and the process must not outlive it.
    child.kill('SIGKILL')
    await exited(child)
    cgroup?.remove()
    throw err
  }
  return {
    url,
    port,
    child,
    memoryLimited: Boolean(cgroup),
    logs,
    async stop (signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
      await exited(child)
      cgroup?.remove()
      return { code: child.exitCode, signal: child.signalCode }
    }
  }
}
