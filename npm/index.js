// The library API of svc. Importing it under Node installs the Node platform first.
export * from "./src/node.js";
