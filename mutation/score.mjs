// One line per room from Stryker's JSON report: the mutation score as
// Stryker counts it (killed + timed out over all valid mutants), the
// counts, the run time, then each mutant still alive.
import { readFileSync } from 'node:fs';

const [report, room, seconds] = process.argv.slice(2);
const files = JSON.parse(readFileSync(report, 'utf8')).files;
const count = {};
const alive = [];
for (const [file, { mutants }] of Object.entries(files)) {
  for (const mutant of mutants) {
    count[mutant.status] = (count[mutant.status] ?? 0) + 1;
    if (mutant.status === 'Survived' || mutant.status === 'NoCoverage') {
      alive.push(
        `  ${mutant.status} ${file}:${mutant.location.start.line}:${mutant.location.start.column} ${mutant.mutatorName} -> ${JSON.stringify(mutant.replacement ?? '')}`,
      );
    }
  }
}
const n = (status) => count[status] ?? 0;
const detected = n('Killed') + n('Timeout');
const valid = detected + n('Survived') + n('NoCoverage');
const score = valid === 0 ? 100 : (100 * detected) / valid;
console.log(
  `${room}: ${score.toFixed(1)} % (${detected}/${valid} detected; survived ${n('Survived')}, no coverage ${n('NoCoverage')}, type errors ${n('CompileError')}, ignored ${n('Ignored')}) in ${seconds} s`,
);
for (const line of alive) console.log(line);
