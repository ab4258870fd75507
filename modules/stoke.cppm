/// @file
/// The C++20 named module `stoke`: `import stoke;` gives the core, the data module, the CPU
/// backend and the learner.
///
/// A thin wrapper, as oneTBB and Taskflow do it: the headers are included in the global
/// module fragment, unchanged, and this file only re-exports their public names with
/// `using`-declarations. The headers stay the one source of truth, so the header build and
/// the module build cannot drift apart; `tests/module` checks that every name below is usable
/// after `import stoke;` and that no public name of the headers is missing here.
///
/// Not in the module: `stoke::detail` (internals), and the CUDA and Vulkan backends (and the
/// MPI group): nvcc does not compile C++20 modules, and those headers need their SDKs, which
/// `import stoke;` must not. A translation unit that uses them includes their headers first,
/// then imports stoke. Entities declared in the global module fragment belong to no module,
/// so a type from the headers and the same type seen through `import stoke;` are one type.
// --8<-- [start:wrapper]
module;

#include <stoke/cpu/eigen.hpp>
#include <stoke/data/sources/stored_arrays.hpp>
#include <stoke/data/sources/stored_npz.hpp>
#include <stoke/data/sources/stored_records.hpp>
#include <stoke/learner.hpp>
#include <stoke/stoke.hpp>
#include <stoke/storage.hpp>

export module stoke;

// The core: devices, backends, collectives, staging, errors, counter-based random numbers.
export namespace stoke {
using stoke::all_gather;
using stoke::AnyCollective;
using stoke::Backend;
using stoke::BufferPool;
using stoke::Collective;
using stoke::CollectiveBackend;
using stoke::DataError;
using stoke::DataErrorContext;
using stoke::Device;
using stoke::device_name;
using stoke::device_t;
using stoke::env_count;
using stoke::Error;
using stoke::Fence;
using stoke::HostBuffer;
using stoke::HostDevice;
using stoke::HostMemory;
using stoke::InputError;
using stoke::InterruptedError;
using stoke::json_excerpt;
using stoke::json_excerpt_chars;
using stoke::JsonFields;
using stoke::mix64;
using stoke::pageable_memory;
using stoke::PageableMemory;
using stoke::parameter_shard;
using stoke::ParameterShard;
using stoke::philox4x32;
using stoke::read_whole_file;
using stoke::SampleRng;
using stoke::SharedMemoryCollective;
using stoke::Staged;
using stoke::stager_t;
using stoke::StagingBackend;
using stoke::StateError;
using stoke::TimeoutError;
using stoke::UsageError;
}  // namespace stoke
// --8<-- [end:wrapper]

// The learner's kernel contract: what the device models' kernels take (stoke::learner_kernels).
export namespace stoke {
using stoke::AdamHyperparameters;
using stoke::max_softmax_classes;
using stoke::OptimizerStepShape;
using stoke::read_on_device;
using stoke::reduced_tail;
using stoke::SgdHyperparameters;
using stoke::SoftmaxOverloads;
using stoke::SoftmaxShape;
using stoke::step_table;
using stoke::step_table_floats;
using stoke::step_table_header;
using stoke::step_table_row;
using stoke::StepScalars;
}  // namespace stoke

// Element-wise float arithmetic with the same bits on every instruction set (the optimizers').
export namespace stoke::exact {
using stoke::exact::add;
using stoke::exact::div;
using stoke::exact::load;
using stoke::exact::mul;
using stoke::exact::Packet;
using stoke::exact::packet_floats;
using stoke::exact::packet_isa;
using stoke::exact::settle;
using stoke::exact::splat;
using stoke::exact::sqrt;
using stoke::exact::store;
using stoke::exact::sub;
using stoke::exact::whole_packets;
using stoke::exact::width;
}  // namespace stoke::exact

// The data module: datasets, batchers, loaders, order, splitting, state, device prefetch.
export namespace stoke {
using stoke::Batch;
using stoke::batch_output_t;
using stoke::Batcher;
using stoke::BatchFeed;
using stoke::BatchLoader;
using stoke::BatchRange;
using stoke::ByteImageNormalization;
using stoke::check_image_normalization;
using stoke::check_image_rows;
using stoke::check_index;
using stoke::ChunkedBatcher;
using stoke::ClassificationBatch;
using stoke::current_sample_context;
using stoke::DataLoader;
using stoke::DataLoaderBuilder;
using stoke::Dataset;
using stoke::dataset_item_t;
using stoke::DefaultStage;
using stoke::DeviceImageBatch;
using stoke::DeviceSequenceBatch;
using stoke::EpochLayout;
using stoke::EpochOrder;
using stoke::EpochPlan;
using stoke::host_bytes;
using stoke::HostArrayOf;
using stoke::HostBytes;
using stoke::HostClassificationBatch;
using stoke::HostSequenceBatch;
using stoke::HostTensor;
using stoke::image_batch_labels;
using stoke::image_batch_pixels;
using stoke::ImageRows;
using stoke::is_host_memory_backend;
using stoke::is_plan_batcher_v;
using stoke::LabeledImage;
using stoke::labelled_rows_offset;
using stoke::LendingStager;
using stoke::loader_backend;
using stoke::loader_backend_t;
using stoke::loader_output_t;
using stoke::loader_state_format;
using stoke::loader_state_format_v2;
using stoke::loader_state_from_json;
using stoke::LoaderBatcher;
using stoke::LoaderOptions;
using stoke::LoaderState;
using stoke::locate_in_shards;
using stoke::MultiThreadLoader;
using stoke::normalization_table;
using stoke::parse_loader_state;
using stoke::PendingBatch;
using stoke::PlanBatcher;
using stoke::PlannedBatches;
using stoke::PooledStorageLoader;
using stoke::PositionSlice;
using stoke::prefetch_to_device;
using stoke::PrefetchLoader;
using stoke::rank_share;
using stoke::RankSplit;
using stoke::read_ahead_depth;
using stoke::read_ahead_window;
using stoke::ReadAheadShardedDataset;
using stoke::Remainder;
using stoke::remainder_name;
using stoke::remainder_named;
using stoke::replaced_samples;
using stoke::ReplacingBatcher;
using stoke::ResumePoint;
using stoke::sample_rng;
using stoke::SampleContext;
using stoke::SampleItemScope;
using stoke::shard_runs;
using stoke::ShardAssignment;
using stoke::ShardCache;
using stoke::ShardCacheOptions;
using stoke::ShardCacheStats;
using stoke::ShardedDataset;
using stoke::ShardedEpochOrder;
using stoke::ShardRanks;
using stoke::ShardRun;
using stoke::ShardTable;
using stoke::split;
using stoke::split_state;
using stoke::SplitShare;
using stoke::SplitSource;
using stoke::to_json;
using stoke::TrainingLoader;
using stoke::upload_image_rows;
using stoke::upload_labelled_image_rows;
using stoke::UploadClassification;
using stoke::UploadHostBytes;
using stoke::UploadSequenceBatch;
}  // namespace stoke

// Variable-length samples: pad, pack and bucket plans per plan window, their shares, mixtures.
export namespace stoke {
using stoke::BucketCost;
using stoke::BucketOptions;
using stoke::BucketPlanner;
using stoke::check_mixture_counts;
using stoke::check_mixture_parameters;
using stoke::ConcatOptions;
using stoke::ConcatPlanner;
using stoke::count_planned_batches;
using stoke::document_order;
using stoke::DocumentLengths;
using stoke::DocumentPiece;
using stoke::estimate_bucket_boundaries;
using stoke::FitOptions;
using stoke::FitPlanner;
using stoke::make_packed_batch;
using stoke::Mixture;
using stoke::mixture_account;
using stoke::mixture_account_format;
using stoke::mixture_parameters;
using stoke::mixture_planner;
using stoke::mixture_state_format;
using stoke::mixture_state_from_json;
using stoke::MixtureCounts;
using stoke::MixtureOptions;
using stoke::MixturePhase;
using stoke::MixturePick;
using stoke::MixturePlanner;
using stoke::MixtureSource;
using stoke::MixtureState;
using stoke::MixtureUnit;
using stoke::MixtureWalk;
using stoke::Oversize;
using stoke::PackedArray;
using stoke::PackedBatch;
using stoke::PackFit;
using stoke::PadBatcher;
using stoke::PaddedBatch;
using stoke::piece_tokens;
using stoke::plan_fingerprint;
using stoke::PlanCursor;
using stoke::PlannedBatch;
using stoke::PlannedBatcher;
using stoke::PlannedEpoch;
using stoke::PlannedRow;
using stoke::PlanPoint;
using stoke::PlanShare;
using stoke::PlanWindows;
using stoke::read_window_documents;
using stoke::ReportingPlanner;
using stoke::round_up_to_multiple;
using stoke::sequence_plan_state_format;
using stoke::sequence_plan_state_from_json;
using stoke::SequencePlanState;
using stoke::ShareBatch;
using stoke::SkippingPlanner;
using stoke::SourceExhaustion;
using stoke::TokenSequence;
using stoke::WindowDocument;
using stoke::WindowDocuments;
using stoke::WindowPlan;
using stoke::WindowPlanner;
using stoke::WindowSkip;
using stoke::WindowStart;
}  // namespace stoke

// Dataset sources.
export namespace stoke {
using stoke::ArrayDataset;
using stoke::ArrayFileFormat;
using stoke::ArrayInfo;
using stoke::ArrayRow;
using stoke::ArrayShard;
using stoke::DType;
using stoke::dtype_name;
using stoke::dtype_of;
using stoke::dtype_size;
using stoke::FileAccess;
using stoke::files_matching;
using stoke::IdxArray;
using stoke::IdxClassificationDataset;
using stoke::InMemoryDataset;
using stoke::load_npy;
using stoke::load_npy_rows;
using stoke::load_npz;
using stoke::MmapRecordDataset;
using stoke::npy_descr;
using stoke::npy_format;
using stoke::npy_max_header;
using stoke::NpyDataset;
using stoke::npz_members;
using stoke::NpzFile;
using stoke::read_idx;
using stoke::read_npy_info;
using stoke::RecordBytes;
using stoke::save_npy;
using stoke::ShardedArrays;
}  // namespace stoke

// Sequences: token stores (Megatron-LM's indexed dataset), read in place and written.
export namespace stoke {
using stoke::megatron_code;
using stoke::megatron_dtype;
using stoke::ShardedTokenStore;
using stoke::token_store_paths;
using stoke::token_store_prefixes;
using stoke::TokenIndex;
using stoke::TokenIndexHeader;
using stoke::TokenStore;
using stoke::TokenStorePaths;
using stoke::TokenStoreWriter;
using stoke::TokenType;
using stoke::UnalignedSpan;
}  // namespace stoke

// Dataset transforms and their pipe: `dataset | stoke::map(f) | stoke::partial(0, 100)`.
export namespace stoke {
using stoke::compose;
using stoke::ComposedDataset;
using stoke::concat;
using stoke::ConcatDataset;
using stoke::DatasetAdaptor;
using stoke::map;
using stoke::MapDataset;
using stoke::MapFunction;
using stoke::operator|;
using stoke::partial;
using stoke::PartialDataset;
using stoke::Replacement;
using stoke::sampled;
using stoke::SampledDataset;
using stoke::shuffled;
using stoke::ShuffledDataset;
using stoke::windows;
using stoke::WindowsDataset;
}  // namespace stoke

// The CPU backend.
export namespace stoke::cpu {
using stoke::cpu::Backend;
using stoke::cpu::BufferPool;
using stoke::cpu::ClassificationBatch;
using stoke::cpu::Device;
using stoke::cpu::EigenMatrix;
using stoke::cpu::HostBuffer;
using stoke::cpu::ImageBatcher;
using stoke::cpu::matrix;
using stoke::cpu::PendingClassification;
using stoke::cpu::PendingStack;
using stoke::cpu::StackBatcher;
using stoke::cpu::Tensor;
}  // namespace stoke::cpu

// The learner: training steps, the learner, optimizers, schedules, metrics, checkpoints.
export namespace stoke {
using stoke::Adam;
using stoke::adam_update;
using stoke::AdamStepFactors;
using stoke::AtomicFileWriter;
using stoke::AtomicWriteHooks;
using stoke::CapturingBackend;
using stoke::Checkpoint;
using stoke::ChecksBatches;
using stoke::ConstantLr;
using stoke::CosineLr;
using stoke::describe;
using stoke::DeviceBackend;
using stoke::DeviceOptimizer;
using stoke::DeviceOptimizerTraits;
using stoke::DeviceTrainStep;
using stoke::ElementwiseOptimizer;
using stoke::encode_safetensors;
using stoke::EpochMetrics;
using stoke::FitResult;
using stoke::Learner;
using stoke::LearnerOptions;
using stoke::load_checkpoint;
using stoke::load_safetensors;
using stoke::LrSchedule;
using stoke::make_tensor_view;
using stoke::MetricsCsv;
using stoke::Mlp;
using stoke::NamedParameters;
using stoke::Optimizer;
using stoke::ParameterTensor;
using stoke::Replica;
using stoke::safetensors_max_header;
using stoke::SafetensorsFile;
using stoke::save_checkpoint;
using stoke::save_safetensors;
using stoke::Sgd;
using stoke::sgd_update;
using stoke::shard_state;
using stoke::SoftmaxBackend;
using stoke::SoftmaxClassifier;
using stoke::stdout_is_terminal;
using stoke::StepLr;
using stoke::StepOutput;
using stoke::TensorView;
using stoke::TrainingProgress;
using stoke::TrainStep;
using stoke::ValidationStep;
using stoke::write_file_atomically;
}  // namespace stoke

// The storage layer's core: byte stores, local files, the scheme registry, key globs (the
// HTTP(S) and S3 stores are stoke::storage, outside the module, as stoke::images is).
export namespace stoke::storage {
using stoke::storage::ByteStore;
using stoke::storage::CachedStore;
using stoke::storage::FetchContext;
using stoke::storage::FileLock;
using stoke::storage::is_key_glob;
using stoke::storage::list_matching;
using stoke::storage::list_url;
using stoke::storage::LocalStore;
using stoke::storage::NodeCache;
using stoke::storage::NodeCacheHooks;
using stoke::storage::NodeCacheOptions;
using stoke::storage::NodeCacheStats;
using stoke::storage::NodeCacheTotals;
using stoke::storage::ObjectInfo;
using stoke::storage::open_url;
using stoke::storage::StorageUrl;
using stoke::storage::store_registry;
using stoke::storage::StoreLocation;
using stoke::storage::StoreObjects;
using stoke::storage::StoreOpener;
using stoke::storage::StoreRegistry;
}  // namespace stoke::storage

// Sharded arrays in a byte store (.npy, .npz, record files): the manifests that open them without
// a read, and their formats.
export namespace stoke {
using stoke::ArrayManifest;
using stoke::make_npy_manifest;
using stoke::make_npz_manifest;
using stoke::make_npz_manifests;
using stoke::make_record_manifest;
using stoke::stored_npy_format;
using stoke::stored_npz_format;
using stoke::stored_objects;
using stoke::stored_records_format;
using stoke::stored_shard_begins;
using stoke::stored_shard_keys;
using stoke::stored_shards_from_json;
using stoke::stored_shards_json;
using stoke::StoredShard;
}  // namespace stoke
