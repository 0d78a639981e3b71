// Child processes and Linux /proc: a process's output, its CPU time and memory,
// signalling it with its children, finding what a command left behind.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs'

/** A function returning everything `child` wrote to stdout and stderr so far. */
export function collect (child) {
  let out = ''
  child.stdout?.on('data', (d) => { out += d })
  child.stderr?.on('data', (d) => { out += d })
  return () => out
}

/** Resolves once `child` has exited (at once if it has). */
export function exited (child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => child.once('exit', resolve))
}

// The state, parent and CPU time (user + system, in clock ticks of 1/100 s, all its threads) of a
// process from /proc/<pid>/stat ("pid (comm) state ppid … utime stime cutime cstime …"), and that of
// its children it has reaped; null once gone.
function stat (pid) {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
    return {
      state: fields[0],
      ppid: Number(fields[1]),
      ticks: Number(fields[11]) + Number(fields[12]),
      reaped: Number(fields[13]) + Number(fields[14])
    }
  } catch {
    return null
  }
}

/** The pids of the processes whose parent is `pid` (Linux /proc). */
export function childrenOf (pid) {
  return readdirSync('/proc').filter((d) => /^\d+$/.test(d) && stat(d)?.ppid === pid).map(Number)
}

/**
 * CPU time (user + system, seconds) of process `pid`, all its threads, and with `children` that of its
 * child processes too, live and ended (PostgreSQL's backends are the postmaster's: a connection closed
 * during a measurement keeps its share, where counting the live ones alone would subtract it).
 */
export function cpuSeconds (pid, { children = false } = {}) {
  const own = stat(pid)
  if (!children) return (own?.ticks ?? 0) / 100
  return childrenOf(pid).reduce((a, p) => a + (stat(p)?.ticks ?? 0), (own?.ticks ?? 0) + (own?.reaped ?? 0)) / 100
}

// Sends `signal` to `pid`, then to each of its children (Linux /proc); returns the children's pids.
export function signalTree (pid, signal) {
  const children = childrenOf(pid)
  for (const p of [pid, ...children]) {
    try { process.kill(p, signal) } catch {}
  }
  return children
}

/** Whether `pid` is gone (a zombie counts: it only waits to be reaped). */
export const gone = (pid) => [undefined, 'Z', 'X'].includes(stat(pid)?.state)

/**
 * Samples the peak resident memory (VmHWM, Linux) of process `pid` every 100 ms until stop(), which
 * returns it in MB: the high-water mark, so a peak between two samples is not missed.
 */
export function watchMemory (pid) {
  let peakKb = 0
  const sample = () => {
    try {
      peakKb = Math.max(peakKb, Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0))
    } catch {} // gone already
  }
  const timer = setInterval(sample, 100)
  return {
    stop () {
      clearInterval(timer)
      sample()
      return Math.round(peakKb / 1024)
    }
  }
}

/**
 * The processes (pids) whose environment holds `name=value` (Linux /proc): give a command a unique
 * marker variable, and whatever it started and left behind — servers, services — is found by it.
 */
export function processesWithEnv (name, value) {
  const want = `${name}=${value}`
  const found = []
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      if (readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(want)) found.push(Number(pid))
    } catch {} // gone, or not ours to read
  }
  return found
}

/**
 * Does process `pid` hold the listening TCP socket of `port` (Linux /proc)? A port chosen free and
 * bound a moment later by a child can be taken meanwhile by another process; its answers would then
 * pass for the child's. Undefined where /proc cannot tell (no such files).
 */
export function listensOn (pid, port) {
  const inodes = new Set()
  let readable = false
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text
    try {
      text = readFileSync(file, 'utf8')
    } catch {
      continue
    }
    readable = true
    // "sl local_address rem_address st … inode": the port in hex after the colon, st 0A = LISTEN.
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/)
      if (f.length > 9 && f[3] === '0A' && Number.parseInt(f[1].split(':')[1], 16) === port) inodes.add(f[9])
    }
  }
  if (!readable) return undefined
  try {
    return readdirSync(`/proc/${pid}/fd`).some((fd) => {
      try {
        return inodes.has(/^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1])
      } catch {
        return false // closed meanwhile
      }
    })
  } catch {
    return false // gone
  }
}
