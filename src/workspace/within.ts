/** Whether `path` is `root` or lies under it (both real, absolute paths). */
export function within(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith("/") ? root : `${root}/`);
}
