#pragma once
/// @file
/// The sequences module: token stores (Megatron-LM's indexed dataset, read in place and
/// written), one file pair or many.

#include <stoke/sequences/batching.hpp>
#include <stoke/sequences/megatron_dtype.hpp>
#include <stoke/sequences/sharded_token_store.hpp>
#include <stoke/sequences/token_index.hpp>
#include <stoke/sequences/token_store.hpp>
#include <stoke/sequences/token_store_writer.hpp>
#include <stoke/sequences/unaligned_span.hpp>
