// A server program from the machine (nginx, prometheus) run in the foreground from a temporary
// directory: started, waited for until an HTTP URL answers, stopped and cleaned up.
import { spawn } from 'node:child_process'
import { mkdtemp, rm, chmod } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'

/** A fresh directory for a daemon's files, readable by all (nginx's workers run as nobody under root). */
export async function daemonDir (name) {
  const dir = await mkdtemp(join(tmpdir(), `suite-${name}-`))
  await chmod(dir, 0o755)
  return dir
}

const READY_WAIT_MS = 30_000

/** Runs `bin args` until GET `readyUrl` is 2xx. Returns { log(), stop() }; stop() also removes `dir`. */
export async function startDaemon ({ bin, args, readyUrl, dir }) {
  const child = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'] })
  let log = ''
  child.stderr.on('data', (d) => { log += d })
  // Most start within a second; on a busy machine (npm test runs its files side by side) one took
  // more than ten.
  const deadline = performance.now() + READY_WAIT_MS
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${bin} exited: ${log}`)
    try { if ((await fetch(readyUrl)).ok) break } catch {}
    if (performance.now() > deadline) throw new Error(`${bin} not ready after ${READY_WAIT_MS / 1000} s: ${log}`)
    await sleep(25)
  }
  return {
    log: () => log,
    async stop () {
      if (child.exitCode === null) {
        child.kill('SIGTERM')
        await new Promise((resolve) => child.once('exit', resolve))
      }
      await rm(dir, { recursive: true, force: true })
    }
  }
}
