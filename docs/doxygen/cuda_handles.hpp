/// @file
/// CUDA driver handle types that the CUDA headers' own briefs, carried into the
/// generated layer, refer to (`::CUfunction`, `::CUkernel`). cuda.h declares them; this
/// file is read by Doxygen only (docs/Doxyfile.in) and never compiled, so that the
/// reference can link them.

/// A kernel loaded into one context (cuda.h); cuwrap::Kernel::function returns it.
typedef struct CUfunc_st* CUfunction;
/// A kernel of a library, independent of contexts (cuda.h); cuwrap::Kernel holds one.
typedef struct CUkern_st* CUkernel;
