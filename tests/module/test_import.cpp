// `import stoke;` alone (no stoke header) gives every public name of the core, the data
// module, the sequences module, the CPU backend and the learner: each name exported by
// modules/stoke.cppm is used here at least once (a concept in a static_assert, a type
// constructed, a function called). A plain program: it prints every failed check and exits
// non-zero if there was one.
#include <unistd.h>
#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

import stoke;

namespace {

int failures = 0;

void check(bool ok, const char* what, int line) {
  if (!ok) {
    std::fprintf(stderr, "test_import.cpp:%d: check failed: %s\n", line, what);
    ++failures;
  }
}
#define CHECK(...) check(static_cast<bool>(__VA_ARGS__), #__VA_ARGS__, __LINE__)

using CpuDevice = stoke::cpu::Device;
using CpuBackend = stoke::cpu::Backend;
using Ints = stoke::InMemoryDataset<int>;
using Stack = stoke::cpu::StackBatcher<float>;

// ---- The concepts, with a type that models each. ----
struct ShardedInts {
  std::size_t size() const { return 6; }
  int get(std::size_t i) const { return static_cast<int>(i); }
  std::vector<std::size_t> shard_begins() const { return {0, 2, 4}; }
};
static_assert(stoke::Device<CpuDevice>);
static_assert(stoke::Backend<CpuBackend>);
static_assert(stoke::Collective<stoke::SharedMemoryCollective>);
static_assert(stoke::CollectiveBackend<CpuBackend>);
static_assert(stoke::Dataset<Ints>);
static_assert(stoke::ShardedDataset<ShardedInts> && !stoke::ShardedDataset<Ints>);
static_assert(!stoke::ReadAheadShardedDataset<Ints>);
static_assert(stoke::Batcher<Stack, CpuBackend, int>);
static_assert(stoke::Batcher<stoke::cpu::ImageBatcher, CpuBackend, stoke::LabeledImage>);
static_assert(std::same_as<stoke::device_t<CpuBackend>, CpuDevice>);
static_assert(std::same_as<stoke::dataset_item_t<Ints>, int>);
static_assert(
    std::same_as<stoke::batch_output_t<Stack, CpuBackend, int>, stoke::cpu::Tensor<float>>);
static_assert(std::derived_from<stoke::InputError, stoke::Error>);
static_assert(std::derived_from<stoke::DataError, stoke::Error>);
static_assert(std::derived_from<stoke::UsageError, stoke::Error>);
static_assert(std::derived_from<stoke::StateError, stoke::UsageError>);
static_assert(std::uniform_random_bit_generator<stoke::SampleRng>);
static_assert(stoke::mix64(0) == 0 && stoke::mix64(1) != 1);
static_assert(stoke::philox4x32({0, 0, 0, 0}, {0, 0}) ==
              std::array<std::uint32_t, 4>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
static_assert(stoke::Optimizer<stoke::Sgd> && stoke::Optimizer<stoke::Adam>);
static_assert(stoke::ElementwiseOptimizer<stoke::Sgd> && stoke::ElementwiseOptimizer<stoke::Adam>);
static_assert(stoke::LrSchedule<stoke::ConstantLr> && stoke::LrSchedule<stoke::StepLr> &&
              stoke::LrSchedule<stoke::CosineLr>);
static_assert(stoke::TrainStep<stoke::Mlp, stoke::Mlp::BatchType>);
static_assert(stoke::ValidationStep<stoke::Mlp, stoke::Mlp::BatchType>);
static_assert(stoke::NamedParameters<stoke::Mlp>);
static_assert(std::same_as<stoke::Mlp::BatchType, stoke::Batch<stoke::cpu::ClassificationBatch>>);

using Threaded = stoke::MultiThreadLoader<Ints, Stack, CpuBackend>;
using InCaller = stoke::BatchLoader<Ints, Stack, CpuBackend>;
static_assert(stoke::DataLoader<Threaded> && stoke::SplitSource<Threaded>);
static_assert(stoke::DataLoader<InCaller> && stoke::SplitSource<InCaller>);
static_assert(std::same_as<stoke::loader_backend_t<Threaded>, CpuBackend>);
static_assert(std::same_as<stoke::loader_backend<InCaller>::type, CpuBackend>);
static_assert(stoke::is_host_memory_backend<CpuBackend>);
static_assert(stoke::HostBytes<stoke::cpu::Tensor<float>> && stoke::HostBytes<std::vector<float>>);

// ---- A staging backend of the test's own: uploads are copies, fences are always ready. ----
struct CopyFence {
  bool ready() const { return true; }
  void wait() const {}
};
struct CopyBuffer {
  std::vector<std::byte> bytes;
  CpuDevice where;
  std::size_t size() const { return bytes.size(); }
  CpuDevice device() const { return where; }
};
struct CopyStager {
  CpuDevice where;
  std::size_t slots = 1;
  CpuDevice device() const { return where; }
  std::size_t capacity() const { return slots; }
  std::size_t staging_buffers() const { return 0; }
  stoke::Staged<CopyBuffer, CopyFence> upload(std::span<const std::byte> bytes) {
    return {CopyBuffer{{bytes.begin(), bytes.end()}, where}, CopyFence{}};
  }
  std::vector<std::byte> download(const CopyBuffer& buffer) { return buffer.bytes; }
};
struct CopyBackend {
  using Device = CpuDevice;
  using Fence = CopyFence;
  using Buffer = CopyBuffer;
  using Stager = CopyStager;
  static std::string_view name() { return "copy"; }
  static std::vector<Device> devices() { return CpuBackend::devices(1); }
  static std::unique_ptr<Stager> make_stager(const Device& device, std::size_t slots) {
    return std::make_unique<Stager>(Stager{device, slots});
  }
};
static_assert(stoke::Fence<CopyFence>);
static_assert(stoke::StagingBackend<CopyBackend> && !stoke::StagingBackend<CpuBackend>);
static_assert(std::same_as<stoke::stager_t<CopyBackend>, CopyStager>);

std::filesystem::path scratch_directory() {
  const auto path = std::filesystem::temp_directory_path() /
                    ("stoke_module_import_" + std::to_string(::getpid()));
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(path);
  return path;
}

void write_bytes(const std::filesystem::path& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

// ---- Core: devices, collectives, errors, random numbers. ----
void core() {
  CHECK(stoke::device_name(CpuDevice{2}) == "cpu:2");
  CHECK(CpuBackend::name() == "cpu" && CpuBackend::devices(3).size() == 3);

  stoke::AnyCollective collective(std::make_unique<stoke::SharedMemoryCollective>(1));
  std::vector<float> values{1.0f, 2.0f};
  collective.all_reduce_sum(0, values);
  CHECK(collective.size() == 1 && values[1] == 2.0f);
  collective.all_gather(0, values);
  stoke::SharedMemoryCollective shared(1);
  stoke::all_gather(shared, 0, values);
  CHECK(values[0] == 1.0f && stoke::parameter_shard(10, 1, 2).begin == 5);
  CHECK((stoke::ParameterShard{.begin = 2, .end = 5}).size() == 3);
  CHECK(CpuBackend::make_collective(CpuBackend::devices(2))->size() == 2);

  try {
    throw stoke::InputError("bad input");
  } catch (const stoke::Error& error) {
    CHECK(std::string(error.what()) == "bad input" && error.where().line() > 0);
  }
  try {
    try {
      throw std::runtime_error("unreadable");
    } catch (...) {
      throw stoke::DataError(stoke::DataErrorContext{.index = 3, .activity = "get"}, "unreadable");
    }
  } catch (const stoke::DataError& error) {
    CHECK(error.context().index == 3 &&
          std::string(error.what()).find("dataset index 3") != std::string::npos);
  }

  stoke::SampleRng a(1, 2, 3), b(1, 2, 3);
  CHECK(a() == b() && a.uniform() < 1.0f);
}

// ---- Data: datasets, transforms, loaders, order, split, state. ----
void data(const std::filesystem::path& dir) {
  const Ints ints(std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  std::vector<int> many;
  ints.get_many(std::vector<std::size_t>{1, 3}, many);
  CHECK(ints.size() == 10 && ints.get(4) == 4 && many == std::vector<int>{1, 3});

  // Transforms and their pipe.
  auto twice = [](int x) { return 2 * x; };
  static_assert(stoke::MapFunction<decltype(twice), Ints>);
  const stoke::MapDataset<Ints, decltype(twice)> doubled = ints | stoke::map(twice);
  const stoke::PartialDataset<Ints> middle = ints | stoke::partial(2, 5);
  const stoke::ShuffledDataset<Ints> shuffled = ints | stoke::shuffled(7);
  const stoke::SampledDataset<Ints> drawn = ints | stoke::sampled(4, 1, stoke::Replacement::with);
  const stoke::WindowsDataset<Ints> windows = ints | stoke::windows(3, 2);
  const stoke::ComposedDataset<Ints, Ints> composed = stoke::compose(ints, ints);
  const stoke::ConcatDataset<Ints> concatenated = stoke::concat(std::vector<Ints>{ints, ints});
  const stoke::DatasetAdaptor<decltype(twice)> plain_adaptor(twice);  // holds any callable
  (void)plain_adaptor;
  const auto chain = stoke::partial(0, 6) | stoke::shuffled(3);  // adaptors compose too
  CHECK(doubled.get(3) == 6 && middle.size() == 3 && middle.get(0) == 2);
  CHECK(shuffled.size() == 10 && drawn.size() == 4 && windows.size() == 4);
  CHECK(windows.get(1) == std::vector<int>{2, 3, 4} && composed.size() == 20);
  CHECK(concatenated.get(12) == 2 && (ints | chain).size() == 6);

  // Order: a bijection per (seed, epoch); shard-aware order keeps shards together.
  const stoke::EpochOrder order(10, 5, 0);
  std::set<std::size_t> seen;
  for (std::size_t p = 0; p < order.size(); ++p) seen.insert(order(p));
  CHECK(order.shuffled() && seen.size() == 10);
  const auto table =
      std::make_shared<const stoke::ShardTable>(std::vector<std::size_t>{0, 2, 4}, 6);
  const stoke::ShardedEpochOrder sharded(table, 1, 0);
  CHECK(table->count() == 3 && sharded(0) / 2 == sharded(1) / 2);

  // Plans: slices and parts over positions of the epoch.
  stoke::EpochPlan plan(10, 3, stoke::Remainder::drop);
  plan.add_share(2, 0);
  const stoke::EpochLayout layout = plan.layout(0);
  const stoke::PositionSlice slice{.begin = 0, .end = 4};
  const stoke::SplitShare part{.count = 2, .index = 1};
  CHECK(layout.num_batches == 1 && slice.end == 4 && part.index == 1);

  // Loaders, built with the builder; per-sample randomness inside `get`.
  const auto noisy = ints | stoke::map([](int x, std::size_t) {
                       const stoke::SampleContext* context = stoke::current_sample_context();
                       return x + static_cast<int>(stoke::sample_rng()() % 2) * 0 +
                              static_cast<int>(context->epoch) * 0;
                     });
  auto builder = stoke::DataLoaderBuilder<CpuBackend, Stack>(Stack{}).batch_size(2).shuffle(11);
  const stoke::LoaderOptions& options = builder.options();
  CHECK(options.batch_size == 2 && options.shuffle);
  Threaded threaded = builder.num_workers(2).drop_last().build(ints);
  InCaller in_caller = builder.build_batch_loader(ints);
  auto noisy_loader = builder.build(noisy);
  std::size_t items = 0;
  for (const stoke::Batch<stoke::cpu::Tensor<float>>& batch : noisy_loader.iter()) {
    items += batch.real_size();
  }
  CHECK(items == 10 && threaded.num_items() == 10 && !threaded.workers_started());
  float sum = 0.0f;
  for (const auto& batch : threaded.slice(0, 4).iter()) {
    for (const float v : batch.data.values()) sum += v;
  }
  CHECK(threaded.slice(0, 4).num_batches() == 2 && sum >= 1.0f);
  in_caller.set_device(CpuDevice{1});
  CHECK((*in_caller.iter().begin()).data.device() == CpuDevice{1});
  CHECK(stoke::current_sample_context() == nullptr);
  try {
    (void)stoke::sample_rng();
    CHECK(false);
  } catch (const stoke::Error&) {
  }
  try {
    (void)stoke::sample_rng(0);
    CHECK(false);
  } catch (const stoke::Error&) {
  }
  const stoke::SampleContext context{.seed = 1, .epoch = 2};
  CHECK(context.epoch == 2 && !context.item);

  // Split per device, parts per rank, state and its JSON.
  const auto devices = CpuBackend::devices(2);
  std::vector<Threaded> parts = stoke::split(threaded, devices);
  CHECK(parts.size() == 2 && parts[1].device() == CpuDevice{1});
  CHECK(stoke::rank_share(threaded, 1, 2).num_batches() == 2);
  const stoke::LoaderState state = stoke::split_state(parts);
  CHECK(state.seed == 11 && state.dataset_size == 10);
  CHECK(stoke::loader_state_from_json(stoke::to_json(state)) == state);
  CHECK(stoke::parse_loader_state(stoke::to_json(state).dump()) == state);

  // Device prefetch: a host backend passes batches through; a staging backend uploads them.
  const std::vector<float> floats{1.0f, 2.0f};
  CHECK(stoke::host_bytes(floats).size() == 2 * sizeof(float));
  CopyStager stager{CpuDevice{0}, 1};
  CHECK(stoke::UploadHostBytes{}(stager, floats).value.size() == 2 * sizeof(float));
  CHECK(stoke::DefaultStage{}(stager, floats).value.size() == 2 * sizeof(float));
  static_assert(!stoke::HostClassificationBatch<std::vector<float>>);
  static_assert(stoke::HostClassificationBatch<stoke::cpu::ClassificationBatch>);
  static_assert(std::is_invocable_v<stoke::UploadClassification, CopyStager&,
                                    stoke::cpu::ClassificationBatch>);
  static_assert(!stoke::LendingStager<CopyStager>);
  static_assert(stoke::PooledStorageLoader<Threaded>);  // StackBatcher draws from a pool
  const std::shared_ptr<stoke::HostMemory> pageable = stoke::pageable_memory();
  CHECK(pageable->name() == "pageable" && dynamic_cast<stoke::PageableMemory*>(pageable.get()));
  const Threaded passed_through = stoke::prefetch_to_device(threaded, 2);
  CHECK(passed_through.num_items() == threaded.num_items());
  stoke::PrefetchLoader<CopyBackend, Threaded> uploading =
      stoke::prefetch_to_device<CopyBackend>(threaded, 2);
  std::size_t uploaded = 0;
  for (const stoke::Batch<CopyBuffer>& batch : uploading.iter()) {
    uploaded += batch.data.size() / sizeof(float);
  }
  CHECK(uploaded == 10);

  // Sources on disk: IDX files and memory-mapped records.
  write_bytes(dir / "images.idx", {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 2, 10, 20, 30, 40});
  write_bytes(dir / "labels.idx", {0, 0, 8, 1, 0, 0, 0, 2, 3, 4});
  const stoke::IdxArray array = stoke::read_idx(dir / "labels.idx");
  const stoke::IdxClassificationDataset images(dir / "images.idx", dir / "labels.idx");
  const stoke::LabeledImage image = images.get(1);
  CHECK(array.dims() == std::vector<std::size_t>{2} && images.size() == 2);
  CHECK(image.label == 4 && image.pixels.size() == 2 && image.pixels[1] == 40);
  write_bytes(dir / "records.bin", {1, 2, 3, 4, 5, 6, 7, 8});
  const stoke::MmapRecordDataset records(dir / "records.bin", 4);
  CHECK(records.size() == 2 && std::to_integer<int>(records.get(1)[0]) == 5);
  const stoke::MmapRecordDataset read(dir / "records.bin", 4, stoke::FileAccess::read);
  const stoke::RecordBytes record = read.get(1);
  CHECK(record.size() == 4 && std::to_integer<int>(record[3]) == 8);
}

// ---- The CPU backend's batchers and tensors. ----
void cpu() {
  const stoke::cpu::Tensor<float> tensor({2, 3}, CpuDevice{1});
  CHECK(tensor.rows() == 2 && tensor.row_size() == 3 && stoke::cpu::matrix(tensor).cols() == 3);
  const std::array<std::uint8_t, 2> pixels{0, 255};
  const stoke::cpu::ImageBatcher batcher{.mean = 0.0f, .std = 1.0f};
  const stoke::cpu::ClassificationBatch batch =
      batcher.batch({stoke::LabeledImage{pixels, 3}}, CpuDevice{0});
  CHECK(batch.labels == std::vector<std::int32_t>{3} && batch.inputs.values()[1] == 1.0f);
  const stoke::cpu::Tensor<double> stacked =
      stoke::cpu::StackBatcher<double>{.scale = 2.0}.batch(std::vector<int>{1, 2}, CpuDevice{});
  CHECK(stacked.values()[1] == 4.0);
  const stoke::cpu::BufferPool pool(2);
  {
    const stoke::cpu::HostBuffer buffer = pool.acquire(16);
  }
  CHECK(pool.free_buffers() == 1 && pool.capacity() == 2);
  // The backend-neutral host storage the CPU backend's names alias.
  static_assert(std::same_as<stoke::cpu::Device, stoke::HostDevice> &&
                std::same_as<stoke::cpu::Tensor<float>, stoke::HostTensor<float>> &&
                std::same_as<stoke::cpu::BufferPool, stoke::BufferPool> &&
                std::same_as<stoke::cpu::HostBuffer, stoke::HostBuffer> &&
                std::same_as<stoke::cpu::ClassificationBatch, stoke::ClassificationBatch>);
  const stoke::BufferPool neutral_pool(1);
  const stoke::HostTensor<float> neutral =
      stoke::HostTensor<float>::uninitialized({2}, stoke::HostDevice{1}, neutral_pool);
  const stoke::HostBuffer neutral_buffer(8);
  const stoke::ClassificationBatch neutral_batch{.inputs = {}, .labels = {1}};
  CHECK(neutral.size() == 2 && neutral.device() == stoke::HostDevice{1} &&
        neutral_buffer.size() >= 8 && neutral_batch.labels.size() == 1);
  stoke::SharedMemoryCollective collective(1);
  collective.abort();
}

/// A stager of the test's own for `upload_image_rows`: it hands the bytes to the filler.
struct FillingStager {
  template <class Fill>
  std::vector<std::byte> upload_with(std::size_t bytes, Fill fill) {
    std::vector<std::byte> staging(bytes);
    fill(std::span<std::byte>(staging));
    return staging;
  }
};

// ---- Building blocks of a user's own dataset, batcher or backend. ----
void building_blocks(const std::filesystem::path& dir) {
  stoke::check_index(1, 2, "Toy");
  try {
    stoke::check_index(2, 2, "Toy");
    CHECK(false);
  } catch (const stoke::UsageError& error) {
    CHECK(std::string(error.what()).find("Toy index 2") != std::string::npos);
  }
  CHECK(!stoke::env_count("STOKE_MODULE_TEST_UNSET_VARIABLE"));
  write_bytes(dir / "whole.bin", {1, 2, 3});
  CHECK(stoke::read_whole_file<std::uint8_t>(dir / "whole.bin", "test").size() == 3);
  const auto json = stoke::to_json(stoke::LoaderState{.seed = 5});
  const stoke::JsonFields fields(json, "loader state");
  CHECK(fields.count("seed") == 5 && stoke::json_excerpt(fields.at("seed")) == "5");
  CHECK(stoke::json_excerpt_chars > 0);

  // The checks and the byte table every image batcher shares.
  const std::array<std::uint8_t, 2> pixels{0, 255};
  const std::vector<stoke::LabeledImage> items{{pixels, 3}, {pixels, 4}};
  stoke::check_image_normalization("Toy", 0.0f, 1.0f);
  CHECK(stoke::image_batch_pixels(items) == 2);
  CHECK(stoke::image_batch_labels("Toy", items) == std::vector<std::int32_t>{3, 4});
  const stoke::ImageRows rows = stoke::check_image_rows("Toy", 0.0f, 1.0f, items);
  CHECK(rows.rows == 2 && rows.pixels == 2);
  const stoke::ByteImageNormalization normalization(0.5f, 2.0f);
  CHECK(normalization.mean() == 0.5f && normalization.std() == 2.0f);
  FillingStager stager;
  const std::vector<std::byte> uploaded = stoke::upload_image_rows(stager, items, rows);
  CHECK(uploaded.size() == 4 && std::to_integer<int>(uploaded[3]) == 255);
  CHECK(stoke::normalization_table(0.0f, 1.0f)[255] == 1.0f);
}

/// Images whose first pixels encode the class: a toy problem the learner can fit.
struct ToyImages {
  std::shared_ptr<const std::vector<std::uint8_t>> pixels;
  std::size_t size() const { return pixels->size() / 4; }
  stoke::LabeledImage get(std::size_t i) const {
    const auto row = std::span(*pixels).subspan(i * 4, 4);
    return {row, static_cast<std::uint32_t>(i % 2)};
  }
};

// ---- The learner, optimizers, schedules, metrics, checkpoints, safetensors. ----
void learner(const std::filesystem::path& dir) {
  auto bytes = std::make_shared<std::vector<std::uint8_t>>();
  for (std::size_t i = 0; i < 64; ++i) {
    const std::uint8_t hot = i % 2 == 0 ? 250 : 5;
    bytes->insert(bytes->end(), {hot, static_cast<std::uint8_t>(255 - hot), 128, 128});
  }
  const ToyImages toy{bytes};
  using Builder = stoke::DataLoaderBuilder<CpuBackend, stoke::cpu::ImageBatcher>;
  auto train = Builder({}).batch_size(4).shuffle(1).drop_last().build(toy);
  auto valid = Builder({}).batch_size(8).pad().build(toy);

  const stoke::Mlp model({4, 2}, 3);
  const std::vector<stoke::ParameterTensor> layout = model.parameter_layout();
  CHECK(layout.size() == 2 && layout[0].name == "layers.0.weight");
  const stoke::LearnerOptions options{.epochs = 2,
                                      .checkpoint_dir = dir / "checkpoints",
                                      .metrics_csv = dir / "metrics.csv",
                                      .log = nullptr};
  stoke::Learner<CpuBackend, stoke::Mlp, stoke::Sgd, stoke::ConstantLr> learner(
      model, stoke::Sgd(0.5f), stoke::ConstantLr{0.5f}, CpuBackend::devices(2), options);
  static_assert(!stoke::Replica<int, int>);
  const stoke::FitResult result = learner.fit(train, valid);
  const stoke::EpochMetrics& last = result.epochs.back();
  CHECK(result.epochs.size() == 2 && last.valid_items == 64 && last.valid_accuracy > 0.9);
  CHECK(stoke::describe(last, 2).find("epoch 2/2") != std::string::npos);
  (void)stoke::stdout_is_terminal();

  const stoke::Checkpoint checkpoint =
      stoke::load_checkpoint(learner.checkpoint_path(), learner.model(), model.parameter_count());
  const stoke::TrainingProgress& progress = checkpoint.progress;
  CHECK(progress.epoch == 2 && checkpoint.parameters.size() == model.parameter_count());
  stoke::save_checkpoint(dir / "copy.safetensors", learner.model(), checkpoint.parameters,
                         checkpoint.optimizer_state, progress);
  CHECK(std::filesystem::exists(dir / "copy.safetensors"));

  stoke::MetricsCsv csv(dir / "more.csv", false);
  csv.write(last);
  CHECK(std::filesystem::file_size(dir / "more.csv") > 0);

  // Optimizers, schedules, step sums.
  std::vector<float> parameters{1.0f}, gradients{1.0f};
  stoke::Adam adam;
  adam.step(parameters, gradients, 0.1f);
  stoke::Sgd sgd(0.1f);
  sgd.step(parameters, gradients);
  CHECK(adam.steps() == 1 && parameters[0] < 0.85f);
  CHECK(stoke::shard_state<stoke::Adam>(adam.state(), 1, {.begin = 0, .end = 1}).size() == 4);
  CHECK(stoke::StepLr{.base = 1.0f, .gamma = 0.5f, .step_size = 1}(2) == 0.25f);
  CHECK(stoke::CosineLr{.base = 1.0f, .total_steps = 10}(10) == 0.0f);
  stoke::StepOutput sums{.loss_sum = 1.0, .correct = 1, .count = 2};
  sums += stoke::StepOutput{.loss_sum = 1.0, .correct = 0, .count = 2};
  CHECK(sums.count == 4);

  // Safetensors and atomic files.
  const std::vector<float> floats{1.0f, 2.0f};
  const stoke::TensorView view = stoke::make_tensor_view<float>(floats, {2});
  const std::map<std::string, stoke::TensorView> tensors{{"x", view}};
  CHECK(stoke::encode_safetensors(tensors).size() > 8);
  stoke::save_safetensors(dir / "x.safetensors", tensors, {{"note", "module test"}});
  const stoke::SafetensorsFile file = stoke::load_safetensors(dir / "x.safetensors");
  CHECK(file.values<float>("x") == floats && file.metadata().at("note") == "module test");
  stoke::write_file_atomically(dir / "note.txt", std::string_view("written"),
                               stoke::AtomicWriteHooks{});
  CHECK(std::filesystem::file_size(dir / "note.txt") == 7);
  stoke::AtomicFileWriter streamed(dir / "streamed.txt");
  streamed.write(std::as_bytes(std::span<const char>("ab", 2)));
  streamed.commit();
  CHECK(std::filesystem::file_size(dir / "streamed.txt") == 2);
}

void sequences(const std::filesystem::path& dir) {
  static_assert(stoke::TokenType<std::uint16_t> && !stoke::TokenType<bool>);
  CHECK(stoke::megatron_dtype(8).value() == stoke::DType::u16 &&
        stoke::megatron_code(stoke::DType::i32) == 4);
  const stoke::TokenStorePaths paths = stoke::token_store_paths(dir / "tokens" / "store");
  CHECK(paths.idx.filename() == "store.idx");
  std::filesystem::create_directories(dir / "tokens");
  stoke::TokenStoreWriter<std::uint16_t> writer(dir / "tokens" / "store");
  const std::vector<std::uint16_t> tokens{5, 6, 7};
  writer.add_document(tokens);
  writer.finish();
  const stoke::TokenStore<std::uint16_t> store(dir / "tokens" / "store");
  CHECK(store.size() == 1 && store.get(0)[2] == 7);
  const stoke::UnalignedSpan<std::int32_t> lengths = store.lengths();
  CHECK(lengths[0] == 3);
  const stoke::TokenIndex& index = store.index();
  CHECK(index.sequence_count() == 1 && stoke::TokenIndexHeader::size == 34);
  const stoke::ShardedTokenStore<std::uint16_t> sharded(
      stoke::token_store_prefixes(dir / "tokens"));
  CHECK(sharded.size() == 1 && sharded.get(0).values[0] == 5);
}

// The storage layer's core: a local store listed by glob, read whole and by range, and a
// scheme of one's own in a registry.
void storage(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir / "objects");
  std::ofstream(dir / "objects" / "a.bin", std::ios::binary) << "abcdef";
  const stoke::storage::LocalStore store(dir / "objects");
  CHECK(stoke::storage::is_key_glob("*.bin") && !stoke::storage::is_key_glob("a.bin"));
  const std::vector<stoke::storage::ObjectInfo> found =
      stoke::storage::list_matching(store, "*.bin");
  CHECK(found.size() == 1 && found[0].size == 6);
  const stoke::storage::ByteStore& bytes = store;
  CHECK(bytes.read_range("a.bin", 2, 2, stoke::storage::FetchContext{.shard = 1}).size() == 2);
  const stoke::storage::StoreObjects listed = stoke::storage::list_url((dir / "objects/").string());
  CHECK(listed.objects.size() == 1);
  CHECK(stoke::storage::StorageUrl::parse("s3://b/k").authority == "b");
  stoke::storage::StoreRegistry registry;
  const stoke::storage::StoreOpener opener = [&](const stoke::storage::StorageUrl& url) {
    return stoke::storage::StoreLocation{std::make_shared<stoke::storage::LocalStore>(dir),
                                         url.path};
  };
  registry.add("mine", opener);
  CHECK(registry.open("mine://x/objects/a.bin").store->read("objects/a.bin").size() == 6);
  CHECK(stoke::storage::store_registry().has("file"));
  CHECK(stoke::storage::open_url((dir / "objects/a.bin").string()).key.ends_with("a.bin"));

  // A .npy shard of 2 float32 rows read through the store, opened from its manifest.
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 1), }";
  header += std::string(128 - 10 - header.size() - 1, ' ') + "\n";
  std::ofstream npy(dir / "objects" / "rows.npy", std::ios::binary);
  npy << "\x93NUMPY\x01" << '\0' << static_cast<char>(header.size()) << '\0' << header;
  const float values[2] = {1.5f, 2.5f};
  npy.write(reinterpret_cast<const char*>(values), sizeof values);
  npy.close();
  const stoke::ArrayManifest manifest = stoke::make_npy_manifest(store, {"rows.npy"});
  const stoke::StoredShard first = manifest.shards.at(0);
  CHECK(first.rows == 2 && first.bytes == 136);
  CHECK(stoke::stored_shards_from_json(stoke::stored_shards_json(manifest.shards), "json") ==
        manifest.shards);
  CHECK(stoke::stored_shard_begins(manifest.shards).back() == 2);
  const stoke::ShardedArrays<float> arrays(
      manifest.keys(),
      stoke::stored_npy_format(std::make_shared<stoke::storage::LocalStore>(dir / "objects"),
                               manifest));
  CHECK(arrays.size() == 2 && arrays.get(1).values[0] == 2.5f);

  // Records of 3 bytes in "a.bin", sized by the store (no read), read through it.
  auto objects = std::make_shared<stoke::storage::LocalStore>(dir / "objects");
  const std::vector<stoke::StoredShard> records = stoke::make_record_manifest(store, {"a.bin"}, 3);
  CHECK(records.at(0).rows == 2);
  const stoke::ShardedArrays<std::uint8_t> rows(stoke::stored_shard_keys(records),
                                                stoke::stored_records_format(objects, records, 3));
  CHECK(rows.size() == 2 && rows.get(1).values[0] == std::uint8_t{'d'});
  // .npz objects: "a.bin" is no zip archive; a format made from a manifest reads nothing.
  bool refused = false;
  try {
    (void)stoke::make_npz_manifest(store, {"a.bin"}, "x");
  } catch (const stoke::InputError&) {
    refused = true;
  }
  CHECK(refused);
  const stoke::ArrayFileFormat npz = stoke::stored_npz_format(objects, manifest, "x");
  CHECK(npz.info(manifest.keys().at(0)).rows() == 2);
}

}  // namespace

int main() {
  const auto dir = scratch_directory();
  try {
    core();
    data(dir);
    cpu();
    building_blocks(dir);
    learner(dir);
    storage(dir);
    sequences(dir);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "test_import: unexpected exception: %s\n", error.what());
    ++failures;
  }
  std::filesystem::remove_all(dir);
  if (failures != 0) {
    std::fprintf(stderr, "test_import: %d checks failed\n", failures);
    return 1;
  }
  std::printf("test_import: every name exported by the module 'stoke' works after import\n");
  return 0;
}
