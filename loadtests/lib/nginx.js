// nginx (the Debian package's binary) as a load balancer in front of local instances, configured
// as the seeds did it: upstream keep-alive, HTTP/1.1 to the backends, round robin or least_conn.
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, writeFile, rm, chmod } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, delimiter } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { freePort } from '@suite/kit/testing'

export const METHODS = { round_robin: '', least_conn: 'least_conn;' }

function nginxBinary () {
  const dirs = [...process.env.PATH.split(delimiter), '/usr/sbin']
  const found = dirs.map((d) => join(d, 'nginx')).find((f) => existsSync(f))
  if (!found) throw new Error('nginx not found: apt-get install nginx')
  return found
}

/** nginx on a free loopback port spreading over `upstreams` (URLs) by `method`; resolves once it proxies. */
export async function startNginx ({ upstreams, method = 'round_robin', workers = 1 }) {
  if (!(method in METHODS)) throw new Error(`unknown balancing method ${method}: ${Object.keys(METHODS).join(', ')}`)
  const dir = await mkdtemp(join(tmpdir(), 'suite-nginx-'))
  await chmod(dir, 0o755) // the workers run as nobody when the master is root
  const port = await freePort()
  const servers = upstreams.map((u) => `    server ${new URL(u).host};`).join('\n')
  await writeFile(join(dir, 'nginx.conf'), `daemon off;
worker_processes ${workers};
pid ${dir}/nginx.pid;
error_log stderr warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream backend {
    ${METHODS[method]}
${servers}
    keepalive 64;
  }
  server {
    listen 127.0.0.1:${port} backlog=8192;
    location / {
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_max_temp_file_size 0;
    }
  }
}
`)
  const child = spawn(nginxBinary(), ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', 'stderr'], { stdio: ['ignore', 'ignore', 'pipe'] })
  let log = ''
  child.stderr.on('data', (d) => { log += d })
  const url = `http://127.0.0.1:${port}`
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`nginx exited: ${log}`)
    try { if ((await fetch(`${url}/healthz`)).ok) break } catch {}
    if (i > 200) throw new Error(`nginx not ready: ${log}`)
    await sleep(25)
  }
  return {
    url,
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
