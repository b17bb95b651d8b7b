// `kforge models`: list the model registry and say which models are usable now;
// `kforge models check ID`: make one tiny call to a model.
#ifndef KFORGE_SRC_CLI_MODELS_COMMAND_H_
#define KFORGE_SRC_CLI_MODELS_COMMAND_H_

namespace CLI {
class App;
}  // namespace CLI

namespace kforge {

// Adds the `models` subcommand (with its `check` subcommand) to `app`. Registry files: the default,
// the user's, then every `--models FILE` given to `models` or to `app` itself (if `app` defines a
// --models option). A failure prints one message to stderr and exits with status 1 (through
// CLI::RuntimeError).
void AddModelsCommand(CLI::App& app);

}  // namespace kforge

#endif  // KFORGE_SRC_CLI_MODELS_COMMAND_H_
