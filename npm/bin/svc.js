#!/usr/bin/env node
// The `svc` command of the npm package: the Node platform is installed before anything else
// runs (importing ../src/node.js does that), then the command line takes over.
import { platform } from "../src/node.js";

const { main } = await import("../cli/main.js");
platform().exit(await main(platform().args()));
