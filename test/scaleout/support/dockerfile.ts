/**
 * Static reading of deploy/Dockerfile and .dockerignore for the image checks (no Docker engine
 * runs here): build stages from dockerfile-ast, and the build context a `.dockerignore` leaves.
 */
import { DockerfileParser, type Flag, type Instruction } from 'dockerfile-ast';

export interface Stage {
  name: string | null;
  image: string | null;
  instructions: Instruction[];
}

/** The Dockerfile's stages, each with the instructions after its FROM. */
export function stagesOf(content: string): Stage[] {
  const stages: Stage[] = [];
  for (const instruction of DockerfileParser.parse(content).getInstructions()) {
    if (instruction.getKeyword() === 'FROM') {
      const args = instruction.getArguments().map((a) => a.getValue());
      const as = args.findIndex((a) => a.toLowerCase() === 'as');
      stages.push({ name: as >= 0 ? (args[as + 1] ?? null) : null, image: args[0] ?? null, instructions: [] });
    } else {
      stages.at(-1)?.instructions.push(instruction);
    }
  }
  return stages;
}

/** Instructions of `keyword` in a stage, as their text after the keyword (flags first, `--name=value`). */
export function argumentsOf(stage: Stage, keyword: string): string[] {
  return stage.instructions
    .filter((i) => i.getKeyword() === keyword)
    .map((instruction) => {
      const flags = 'getFlags' in instruction ? (instruction as Instruction & { getFlags(): Flag[] }).getFlags() : [];
      return [...flags.map((flag) => `--${flag.getName()}=${flag.getValue() ?? ''}`), instruction.getArgumentsContent() ?? ''].join(' ');
    });
}

/**
 * Whether `.dockerignore` keeps `file` (a path relative to the context) in the build context.
 * The patterns this repository uses: `*`-globs within one path segment and `!` exceptions; like
 * Docker, a pattern matching a parent folder applies to everything under it and the last match wins.
 */
export function keptInContext(dockerignore: string, file: string): boolean {
  const patterns = dockerignore
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
  const prefixes = file.split('/').map((_part, i, parts) => parts.slice(0, i + 1).join('/'));
  let kept = true;
  for (const raw of patterns) {
    const negated = raw.startsWith('!');
    const pattern = (negated ? raw.slice(1) : raw).replace(/^\/+|\/+$/g, '');
    const regex = new RegExp(
      `^${pattern
        .split('*')
        .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
        .join('[^/]*')}$`,
    );
    if (prefixes.some((prefix) => regex.test(prefix))) kept = negated;
  }
  return kept;
}
