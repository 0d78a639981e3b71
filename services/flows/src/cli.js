#!/usr/bin/env node
// flows serve | migrate
import { runCli } from '@suite/kit/cli'
import service from './service.js'

await runCli(service)
