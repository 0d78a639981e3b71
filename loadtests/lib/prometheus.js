// A throwaway Prometheus (the Debian package's binary) that scrapes local services the way the
// cluster's does — every series with job=<service>, namespace and pod — and takes k6's remote write.
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, writeFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, delimiter } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { freePort } from '@suite/kit/testing'

function prometheusBinary () {
  const found = [...process.env.PATH.split(delimiter), '/usr/bin'].map((d) => join(d, 'prometheus')).find((f) => existsSync(f))
  if (!found) throw new Error('prometheus not found: apt-get install prometheus')
  return found
}

/**
 * jobs: { <service>: [url, …] }. Each job scrapes its instances every `scrapeSeconds`; a static
 * `namespace` label and `pod` = the instance stand in for what the ServiceMonitor adds in a cluster.
 * Returns { url, writeUrl, api(path, params), stop() }.
 */
export async function startPrometheus ({ jobs, namespace = 'suite', scrapeSeconds = 1 }) {
  const dir = await mkdtemp(join(tmpdir(), 'suite-prometheus-'))
  const port = await freePort()
  const scrapeConfigs = Object.entries(jobs).map(([job, urls]) => ({
    job_name: job,
    static_configs: [{ targets: urls.map((u) => new URL(u).host), labels: { namespace } }],
    relabel_configs: [{ source_labels: ['__address__'], target_label: 'pod' }]
  }))
  // JSON is YAML: no YAML library needed.
  await writeFile(join(dir, 'prometheus.yml'), JSON.stringify({
    global: { scrape_interval: `${scrapeSeconds}s`, scrape_timeout: `${scrapeSeconds}s`, evaluation_interval: `${scrapeSeconds}s` },
    scrape_configs: scrapeConfigs
  }, null, 2))
  const child = spawn(prometheusBinary(), [
    `--config.file=${join(dir, 'prometheus.yml')}`,
    `--storage.tsdb.path=${join(dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`,
    '--web.enable-remote-write-receiver',
    '--log.level=warn'
  ], { stdio: ['ignore', 'ignore', 'pipe'] })
  let log = ''
  child.stderr.on('data', (d) => { log += d })
  const url = `http://127.0.0.1:${port}`
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`prometheus exited: ${log}`)
    try { if ((await fetch(`${url}/-/ready`)).ok) break } catch {}
    if (i > 400) throw new Error(`prometheus not ready: ${log}`)
    await sleep(25)
  }
  return {
    url,
    writeUrl: `${url}/api/v1/write`,
    log: () => log,
    /** GET /api/v1/<path>; resolves to `data`, rejects with Prometheus' error. */
    async api (path, params) {
      const res = await fetch(`${url}/api/v1/${path}?${new URLSearchParams(params)}`)
      const body = await res.json()
      if (body.status !== 'success') throw new Error(`${body.errorType}: ${body.error}`)
      return body.data
    },
    async stop () {
      if (child.exitCode === null) {
        child.kill('SIGTERM')
        await new Promise((resolve) => child.once('exit', resolve))
      }
      await rm(dir, { recursive: true, force: true })
    }
  }
}
