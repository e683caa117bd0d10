// Reads [{name, source}] as JSON on stdin and prints [{name, errors}]: every
// ERROR and MISSING node tree-sitter's PowerShell grammar finds, with its
// line and column in that source.
'use strict';
const { Parser, Language } = require('web-tree-sitter');
const fs = require('fs');

(async () => {
  await Parser.init();
  const language = await Language.load(require.resolve('tree-sitter-powershell/tree-sitter-powershell.wasm'));
  const parser = new Parser();
  parser.setLanguage(language);
  const inputs = JSON.parse(fs.readFileSync(0, 'utf8'));
  const out = inputs.map(({ name, source }) => {
    const errors = [];
    const walk = (node) => {
      if (node.isMissing) {
        errors.push(`${node.startPosition.row + 1}:${node.startPosition.column + 1}: missing ${node.type}`);
      } else if (node.isError) {
        errors.push(`${node.startPosition.row + 1}:${node.startPosition.column + 1}: cannot parse ${JSON.stringify(node.text.slice(0, 60))}`);
      }
      for (const child of node.children) walk(child);
    };
    const tree = parser.parse(source);
    walk(tree.rootNode);
    tree.delete();
    return { name, errors };
  });
  process.stdout.write(JSON.stringify(out));
})().catch((err) => {
  process.stderr.write(String(err && err.stack || err) + '\n');
  process.exit(1);
});
