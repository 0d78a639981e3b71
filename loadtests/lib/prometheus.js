// A throwaway Prometheus (the Debian package's binary) that scrapes local services the way the
// cluster's does — every series with job=<service>, namespace and pod.
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { findBinary, freePort } from '@suite/kit/testing'
import { daemonDir, startDaemon } from './daemon.js'

/**
 * jobs: { <service>: [url, …] }. Each job scrapes its instances every `scrapeSeconds`; a static
 * `namespace` label and `pod` = the instance stand in for what the ServiceMonitor adds in a cluster.
 * `groups`: rule groups (a PrometheusRule's spec.groups) it evaluates every `scrapeSeconds`. Exemplar
 * storage is on (the scrapes ask for OpenMetrics, as Prometheus does by default), as in
 * k8s/kube-prometheus-stack.yaml.
 * Returns { url, api(path, params), stop() }.
 */
export async function startPrometheus ({ jobs, namespace = 'suite', scrapeSeconds = 1, groups }) {
  const bin = findBinary('prometheus')
  const dir = await daemonDir('prometheus')
  const port = await freePort()
  const scrapeConfigs = Object.entries(jobs).map(([job, urls]) => ({
    job_name: job,
    static_configs: [{ targets: urls.map((u) => new URL(u).host), labels: { namespace } }],
    relabel_configs: [{ source_labels: ['__address__'], target_label: 'pod' }]
  }))
  // JSON is YAML: no YAML library needed.
  if (groups) await writeFile(join(dir, 'rules.yml'), JSON.stringify({ groups }, null, 2))
  await writeFile(join(dir, 'prometheus.yml'), JSON.stringify({
    global: {
      scrape_interval: `${scrapeSeconds}s`,
      scrape_timeout: `${scrapeSeconds}s`,
      evaluation_interval: `${scrapeSeconds}s`
    },
    scrape_configs: scrapeConfigs,
    ...(groups && { rule_files: [join(dir, 'rules.yml')] })
  }, null, 2))
  const url = `http://127.0.0.1:${port}`
  const daemon = await startDaemon({
    bin,
    args: [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--enable-feature=exemplar-storage',
      '--log.level=warn'
    ],
    readyUrl: `${url}/-/ready`,
    dir
  })
  return {
    url,
    ...daemon,
    /** GET /api/v1/<path>; resolves to `data`, rejects with Prometheus' error. */
    async api (path, params) {
      const res = await fetch(`${url}/api/v1/${path}?${new URLSearchParams(params)}`)
      const body = await res.json()
      if (body.status !== 'success') throw new Error(`${body.errorType}: ${body.error}`)
      return body.data
    }
  }
}
