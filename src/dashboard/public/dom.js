/*
 * How the dashboard page (app.js, samples.js) builds HTML: `element(tag, properties, ...children)`,
 * where every child string becomes a text node. The page uses no innerHTML, so run files (model
 * output included) can never become markup. Not a framework: no state, no diffing.
 */

/** Create an element with properties (className, dataset entries, on* handlers) and children; null children are left out. */
export function element(tag, properties = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(properties)) {
    if (name === 'dataset') Object.assign(node.dataset, value);
    else if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
    else node[name] = value;
  }
  node.append(
    ...children
      .filter((child) => child !== null && child !== undefined)
      .map((child) => (typeof child === 'object' ? child : String(child))),
  );
  return node;
}
