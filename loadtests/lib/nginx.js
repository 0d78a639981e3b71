// nginx (the Debian package's binary) as a load balancer in front of local instances, configured
// as the seeds did it: upstream keep-alive, HTTP/1.1 to the backends, round robin or least_conn.
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { findBinary, freePort } from '@suite/kit/testing'
import { daemonDir, startDaemon } from './daemon.js'

const METHODS = { round_robin: '', least_conn: 'least_conn;' }

/** nginx on a free loopback port spreading over `upstreams` (URLs) by `method`; resolves once it proxies. */
export async function startNginx ({ upstreams, method = 'round_robin', workers = 1 }) {
  if (!(method in METHODS)) throw new Error(`unknown balancing method ${method}: ${Object.keys(METHODS).join(', ')}`)
  const bin = findBinary('nginx')
  const dir = await daemonDir('nginx')
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
  const url = `http://127.0.0.1:${port}`
  const daemon = await startDaemon({
    bin,
    args: ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', 'stderr'],
    readyUrl: `${url}/healthz`,
    dir
  })
  return { url, ...daemon }
}
