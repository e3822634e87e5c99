import { UsageError } from './cli-error.js';
import type { CommandContext, CommandSpec } from './command-spec.js';

/** The words that may follow `prefix` (`''` = right after `svc`), in the help's order. */
function nextWords(commands: CommandSpec[], prefix: string[]): string[] {
  const next = commands
    .filter((c) => c.words.length > prefix.length && prefix.every((w, i) => c.words[i] === w))
    .map((c) => c.words[prefix.length]!);
  return [...new Set(next)];
}

/** Every flag of a command, long and short, with the global ones. */
function flagsOf(command: CommandSpec): string[] {
  const flags = Object.entries(command.options).flatMap(([name, o]) => [
    `--${name}`,
    ...(o.short ? [`-${o.short}`] : []),
  ]);
  return [...flags, '--json', '--help', '-h'];
}

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

function caseFunction(name: string, entries: [string, string[]][]): string {
  const arms = entries
    .filter(([, values]) => values.length > 0)
    .map(([key, values]) => `    ${quote(key)}) echo ${quote(values.join(' '))} ;;`);
  return [`${name}() {`, '  case "$1" in', ...arms, '  esac', '}'].join('\n');
}

/**
 * The tables both shells read: the command words after a prefix, the flags of a command, and
 * the choices of its first argument. Plain functions that bash and zsh run alike.
 */
function tables(commands: CommandSpec[]): string {
  const prefixes = new Map<string, string[]>();
  for (const c of commands)
    for (let n = 0; n < c.words.length; n++) prefixes.set(c.words.slice(0, n).join(' '), c.words.slice(0, n));
  return [
    caseFunction(
      '_svc_words',
      [...prefixes].map(([key, words]) => [key, nextWords(commands, words)]),
    ),
    caseFunction(
      '_svc_flags',
      commands.map((c) => [c.words.join(' '), flagsOf(c)]),
    ),
    caseFunction(
      '_svc_choices',
      commands.map((c) => [c.words.join(' '), c.choices ?? []]),
    ),
    // Walks the words before the cursor: command words extend the command, the rest are arguments.
    `_svc_parse() {
  _svc_cmd=""
  _svc_args=0
  local word
  for word in "$@"; do
    case "$word" in -*) continue ;; esac
    if [ "$_svc_args" -eq 0 ] && case " $(_svc_words "$_svc_cmd") " in *" $word "*) true ;; *) false ;; esac; then
      _svc_cmd="\${_svc_cmd:+$_svc_cmd }$word"
    else
      _svc_args=$((_svc_args + 1))
    fi
  done
}
_svc_candidates() {
  case "$1" in
    -*) _svc_flags "$_svc_cmd" ;;
    *)
      local next
      next=$(_svc_words "$_svc_cmd")
      if [ -n "$next" ]; then echo "$next"
      elif [ "$_svc_args" -eq 0 ]; then _svc_choices "$_svc_cmd"
      fi ;;
  esac
}`,
  ].join('\n\n');
}

export function bashCompletion(commands: CommandSpec[]): string {
  return `# bash completion for svc. Load it with: source <(svc completion bash)
# or install it: svc completion bash > ~/.local/share/bash-completion/completions/svc
${tables(commands)}

_svc() {
  _svc_parse "\${COMP_WORDS[@]:1:COMP_CWORD-1}"
  local cur=\${COMP_WORDS[COMP_CWORD]}
  COMPREPLY=($(compgen -W "$(_svc_candidates "$cur")" -- "$cur"))
}
# Nothing to offer (a file argument): the shell completes file names.
complete -o default -F _svc svc
`;
}

export function zshCompletion(commands: CommandSpec[]): string {
  return `#compdef svc
# zsh completion for svc. Load it after compinit with: source <(svc completion zsh)
# or install it as _svc in a directory of $fpath.
${tables(commands)}

_svc() {
  _svc_parse "\${(@)words[2,CURRENT-1]}"
  local -a candidates
  candidates=(\${=$(_svc_candidates "\${words[CURRENT]}")})
  if (( \${#candidates} )); then
    compadd -- "\${candidates[@]}"
  else
    _files
  fi
}
compdef _svc svc
`;
}

/** `svc completion bash|zsh`: the commands are read from the list `main` dispatches on. */
export function completionCommand(commands: () => CommandSpec[]): CommandSpec {
  return {
    words: ['completion'],
    args: '<bash|zsh>',
    summary: 'print a shell completion script, e.g. source <(svc completion bash)',
    options: {},
    optionHelp: [],
    positionals: { min: 1, max: 1 },
    choices: ['bash', 'zsh'],
    async run(ctx: CommandContext) {
      const shell = ctx.positionals[0]!;
      const script =
        shell === 'bash'
          ? bashCompletion(commands())
          : shell === 'zsh'
            ? zshCompletion(commands())
            : undefined;
      if (script === undefined) throw new UsageError(`unknown shell "${shell}": use bash or zsh`);
      ctx.io.stdout.write(script);
    },
  };
}
