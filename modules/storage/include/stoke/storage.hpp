#pragma once
/// @file
/// The storage layer's core: byte stores, local files, the scheme registry, key globs and the
/// node cache (`NodeCache`, `CachedStore`). The HTTP(S) and S3 stores are `stoke::storage`
/// (<stoke/storage/remote/remote_stores.hpp>).

#include <stoke/storage/byte_store.hpp>
#include <stoke/storage/cached_store.hpp>
#include <stoke/storage/file_lock.hpp>
#include <stoke/storage/key_glob.hpp>
#include <stoke/storage/local_store.hpp>
#include <stoke/storage/node_cache.hpp>
#include <stoke/storage/object_info.hpp>
#include <stoke/storage/storage_url.hpp>
#include <stoke/storage/store_registry.hpp>
