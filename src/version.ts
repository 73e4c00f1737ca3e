/** The version svc reports: the command line's `--version`, the npm package, `/api/status`. */
export const VERSION = "0.1.0";
