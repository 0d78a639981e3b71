// The kit's ETL: CSV files streamed into PostgreSQL with COPY, checked row by row, swapped in atomically;
// and a generator's rows streamed straight in (seedTable).
export { CsvParser, parseCsv } from './csv.js'
export { copyLine, pgTarget, pgliteTarget } from './copy.js'
export { IdSet } from './idset.js'
export { loadTables, LoadRefused, buildIndexes } from './load.js'
export { seedTable } from './seed.js'
export { prng, createOutput } from './generate.js'
