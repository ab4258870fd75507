#pragma once
/// @file
/// Variable-length batching: pad, pack (concatenate-then-split, first-fit, best-fit) and bucket
/// plans computed per plan window, their split into equal shares, and mixtures of sources.
/// A plan runs inside stoke's own loaders through `PlannedBatcher` (see its header for the API).

#include <stoke/sequences/bucket_plan.hpp>
#include <stoke/sequences/mixture.hpp>
#include <stoke/sequences/mixture_account.hpp>
#include <stoke/sequences/mixture_planner.hpp>
#include <stoke/sequences/mixture_walk.hpp>
#include <stoke/sequences/pack_concat.hpp>
#include <stoke/sequences/pack_fit.hpp>
#include <stoke/sequences/packed_batch.hpp>
#include <stoke/sequences/pad_batcher.hpp>
#include <stoke/sequences/piece_tokens.hpp>
#include <stoke/sequences/plan_share.hpp>
#include <stoke/sequences/plan_windows.hpp>
#include <stoke/sequences/planned_batcher.hpp>
#include <stoke/sequences/planned_epoch.hpp>
#include <stoke/sequences/sequence_plan.hpp>
#include <stoke/sequences/sequence_plan_state.hpp>
#include <stoke/sequences/window_documents.hpp>
