#!/usr/bin/env node
// profile serve | migrate | generate | load
import { runCli } from '@suite/kit/cli'
import service from './service.js'

await runCli(service)
