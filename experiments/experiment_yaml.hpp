/**
 * @file experiment_yaml.hpp
 * One expanded sweep experiment (sweep.hpp) read into the TrainingExperiment the training
 * simulation takes (systems/training_spec.hpp): every key typed, defaulted and range-checked,
 * unknown keys reported with the nearest valid one, then the cross-field rules (parallelism,
 * servers, NICs, topology size) checked together. Every key is listed in docs/sweep.md.
 */
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <string>

#include "experiments/config_reader.hpp"
#include "experiments/sweep.hpp"
#include "systems/training_spec.hpp"

namespace mv {

/**
 * Reads `x.config` into a TrainingExperiment (name and id from `x`). Relative file paths
 * (a topology file) are resolved against `dir`. Every problem goes to `diags` with the
 * sweep file, the line (of the axis when an axis set the value) and the key path; the
 * experiment returned is then not to be simulated.
 *
 * Without `topology:` the experiment gets a non-blocking rail-optimised fabric sized for
 * the job: gpus / gpus_per_server servers, nics_per_server rails, one leaf per rail per 64
 * servers, as many spines as a leaf has servers, every link 100 Gb/s and 1 µs.
 */
TrainingExperiment readExperiment(const ExpandedExperiment& x, const std::filesystem::path& dir, Diagnostics& diags);

/**
 * The 1-based line of the sweep file that dotted `key` of `x` comes from: the axis that set
 * it or a mapping around it; else the line it is written on in the base (the key's line for a
 * block mapping or list), or that of the closest enclosing key; else an axis that set a key
 * inside it; 0 when none.
 */
int keyLine(const ExpandedExperiment& x, const std::string& key);

/**
 * Reads every experiment of `sweep` (paths relative to the sweep file's folder) and hands
 * each one read without problems to `use`, in order. Problems go to `diags`, each distinct
 * one once, saying which experiment has it (or how many) when the sweep has several.
 */
void readExperiments(const Sweep& sweep, Diagnostics& diags, const std::function<void(TrainingExperiment&&)>& use);
/**
 * "" when no experiment read before has `x`'s id (its resolved configuration), recording
 * it in `names_by_id`; else the problem: two combinations written differently that are the
 * same experiment once their defaults are applied.
 */
std::string sameExperiment(std::map<uint64_t, std::string>& names_by_id, const TrainingExperiment& x);

}  // namespace mv
