#pragma once
/// @file
/// The data module: datasets, batchers, loaders, splitting.

#include <stoke/data/batch.hpp>
#include <stoke/data/batch_loader.hpp>
#include <stoke/data/batch_range.hpp>
#include <stoke/data/batcher.hpp>
#include <stoke/data/builder.hpp>
#include <stoke/data/dataloader.hpp>
#include <stoke/data/dataset.hpp>
#include <stoke/data/device_image_batch.hpp>
#include <stoke/data/epoch_plan.hpp>
#include <stoke/data/multithread_loader.hpp>
#include <stoke/data/options.hpp>
#include <stoke/data/order.hpp>
#include <stoke/data/prefetch.hpp>
#include <stoke/data/replaced_samples.hpp>
#include <stoke/data/sample_context.hpp>
#include <stoke/data/shard_cache.hpp>
#include <stoke/data/shard_ranks.hpp>
#include <stoke/data/sharded_order.hpp>
#include <stoke/data/sources.hpp>
#include <stoke/data/split.hpp>
#include <stoke/data/state.hpp>
#include <stoke/data/training_loader.hpp>
#include <stoke/data/transforms.hpp>
