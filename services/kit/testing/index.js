// The kit's test helpers: throwaway PostgreSQL and Redis servers, a service run as a real child
// process, HTTP helpers, and the error contract checked route by route. Nothing here mocks anything.
export { freePort, freePortBlock } from './ports.js'
export { childrenOf, cpuSeconds, watchMemory, processesWithEnv } from './processes.js'
export { startPostgres, startStandby, startRedis, createDatabase, databaseEnv } from './servers.js'
export { startService } from './service.js'
export { send, sendOnNewConnection, get, metric, keepAliveLoad, conforms } from './http.js'
export { toolsDir, goBinDir, findBinary, whichBinary } from './tools.js'
export { startJaeger } from './jaeger.js'
export { waitFor } from './wait.js'
export { checkErrorContract, assertError, raw } from './contract.js'
