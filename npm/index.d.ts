export * from "./src/node.js";
