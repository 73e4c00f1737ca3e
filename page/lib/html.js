/**
 * The page's view layer: Preact with htm's tagged templates (vendored, see vendor/VENDOR.md).
 * A `${value}` in a template is always text or a property, never parsed as markup: that is
 * what keeps a script's log line, a card title or an agent's answer from becoming HTML.
 */
import htm from "../vendor/htm.js";
import { h, render } from "../vendor/preact.js";

export { render };
export { useCallback, useEffect, useMemo, useRef, useState } from "../vendor/hooks.js";

/** `html\`<p>${text}</p>\`` builds Preact elements. */
export const html = htm.bind(h);
