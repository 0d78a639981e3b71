#!/usr/bin/env node
// product serve | migrate | generate | load
import { runCli } from '@suite/kit/cli'
import service from './service.js'

await runCli(service)
