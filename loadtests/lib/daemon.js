// A server program from the machine (nginx, prometheus) run in the foreground from a temporary
// directory: started, waited for until an HTTP URL answers, stopped and cleaned up.
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, rm, chmod } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, delimiter } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'

/** A fresh directory for a daemon's files, readable by all (nginx's workers run as nobody under root). */
export async function daemonDir (name) {
  const dir = await mkdtemp(join(tmpdir(), `suite-${name}-`))
  await chmod(dir, 0o755)
  return dir
}

/** `name` on PATH or in `dirs` (Debian puts nginx in /usr/sbin, which a user's PATH may lack). */
export function findBinary (name, dirs, hint) {
  const found = [...process.env.PATH.split(delimiter), ...dirs].map((d) => join(d, name)).find((f) => existsSync(f))
  if (!found) throw new Error(`${name} not found: ${hint}`)
  return found
}

/** Runs `bin args` until GET `readyUrl` is 2xx. Returns { log(), stop() }; stop() also removes `dir`. */
export async function startDaemon ({ bin, args, readyUrl, dir }) {
  const child = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'] })
  let log = ''
  child.stderr.on('data', (d) => { log += d })
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`${bin} exited: ${log}`)
    try { if ((await fetch(readyUrl)).ok) break } catch {}
    if (i > 400) throw new Error(`${bin} not ready after 10 s: ${log}`)
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
