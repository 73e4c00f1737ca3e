/**
 * The lifeline of a command that `Platform.run` starts in a process group of its own.
 * A group of its own keeps a terminal's Ctrl-C from reaching the child twice, but it also cuts
 * the child loose: when the runner dies of a signal it cannot catch (SIGKILL from a supervisor,
 * `docker kill`, a test's cleanup), the child and everything it started would keep running
 * with parent 1, still holding ports and runs.
 *
 * Neither runtime lets a child inherit an extra pipe, so the pipe is watched by a small POSIX
 * shell beside the child: the runner holds the write end of the shell's standard input. When
 * the child ends, the runner writes a line and the shell leaves; when the runner dies first, the
 * kernel closes the pipe, the shell reads end-of-file, and it kills the child's group and every
 * descendant of the child (guests and tools sit in groups of their own). SIGKILL, not SIGTERM:
 * the runs the child had must be left as after any crash, `running` with a dead host, which the
 * next host marks `interrupted` and resumable (a SIGTERM would make a server cancel them).
 *
 * @module
 */
/** The shell that watches the pipe; every POSIX system has one here. */
export const LIFELINE_SHELL = "/bin/sh";

/**
 * The watcher: `$1` is the child's pid, which leads its own group. It ignores the signals a
 * terminal or a supervisor sends to a whole group or session, so that only the pipe decides.
 * The child's group is stopped first so that it starts nothing new while its tree is read.
 */
const SCRIPT = `trap '' HUP INT TERM QUIT
read -r _ && exit 0
kill -s STOP -- "-$1" 2>/dev/null
tree=$(ps -A -o pid= -o ppid= 2>/dev/null | awk -v root="$1" '
  { kids[$2] = kids[$2] " " $1 }
  END {
    todo = root
    while (todo != "") {
      n = split(todo, queue, " "); todo = ""
      for (i = 1; i <= n; i++) {
        m = split(kids[queue[i]], found, " ")
        for (j = 1; j <= m; j++) { print found[j]; todo = todo " " found[j] }
      }
    }
  }')
kill -s KILL -- "-$1" $tree 2>/dev/null
exit 0
`;

/** The arguments of {@linkcode LIFELINE_SHELL} that watch the child `pid`. */
export function lifelineArgs(pid: number): string[] {
  return ["-c", SCRIPT, "svc-lifeline", String(pid)];
}

/** What the runner writes when its child has ended: the watcher then leaves, killing nothing. */
export const LIFELINE_RELEASE = "ended\n";
