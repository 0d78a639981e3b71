#!/usr/bin/env node
// charts/suite's dependencies in its charts/ folder without the internet, as `helm dependency build`
// would leave them: the local charts packaged, the Bitnami archives from ../shared/k8s/charts
// (SUITE_K8S_DATA/charts) at the versions Chart.yaml pins. skaffold's lab profile runs it before each
// deploy (the lab reaches no chart repository); git ignores what it writes.
//   node scripts/chart-dependencies.js [CHART_DIR]   (default: charts/suite)
import { join } from 'node:path'
import { charts, fillDependencies } from '../charts/test/lib.js'

const dir = process.argv[2] ?? join(charts, 'suite')
try {
  console.error(`chart-dependencies: ${fillDependencies(dir).join(', ')} in ${join(dir, 'charts')}`)
} catch (err) {
  console.error(`chart-dependencies: ${err.message}`)
  process.exit(1)
}
