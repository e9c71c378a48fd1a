#pragma once
// The standard card-config options of subcommands: `--config FILE` and `--set path=value`.

#include "engine/card/card_config.hpp"

#include <boost/program_options.hpp>

#include <span>
#include <string_view>
#include <vector>

namespace cardsim::cli {

/// `--config FILE` (a TOML card config merged over the built-in D5005 default) and
/// `--set path=value` (repeatable; a dotted key of the config, applied after the file).
boost::program_options::options_description card_options();

/// The card config the parsed options ask for: the default, the `--config` file, the `--set`
/// overrides, then `extra` (a subcommand's own overrides, e.g. `--channels`). Bad input is a
/// cardsim::Error naming the file or the option, the key and what was expected; so is a system of
/// several cards (`system.cards`), or an exchange other than `exact` (`system.exchange`), for a
/// command without `--plan` (it runs one card).
card::CardConfig load_card(const boost::program_options::variables_map& vm,
                           std::span<const card::Override> extra = {});

/// As `load_card`, for a command that reads the config whatever system it describes (`config`
/// prints it, `fit` estimates one card's logic, the same on every card of a system).
card::CardConfig load_card_any_system(const boost::program_options::variables_map& vm,
                                      std::span<const card::Override> extra = {});

/// Throws cardsim::Error naming the first of the parsed --set options (and `extra`) whose key
/// `command` does not read: those whose paths start with none of `read` (dotted prefixes such as
/// `ddr.`, or whole keys). `why` says what the command reads. A --config file describes a whole
/// card and is taken as it is; a --set of a key nothing reads would be a silent no-op, so it is
/// refused.
void refuse_unread_sets(const boost::program_options::variables_map& vm,
                        std::span<const card::Override> extra, std::string_view command,
                        std::span<const std::string_view> read, std::string_view why);

/// `--knob k=v` (repeatable): a numerics knob, the same as `--set numerics.k=v`.
boost::program_options::options_description knob_options();

/// The overrides the parsed `--knob` options ask for (`numerics.` before each key).
std::vector<card::Override> knob_overrides(const boost::program_options::variables_map& vm);

} // namespace cardsim::cli
