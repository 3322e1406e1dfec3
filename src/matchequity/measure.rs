//! Measures the starter's outcome distribution of each variant with rollouts of the
//! starting position by the engine itself (`tavli-engine met --generate`; the result
//! is the committed `data/met-distributions.json`).
//!
//! For each variant: `batches` independent rollouts ([`crate::eval::rollout`]) of the
//! start with the starter to roll two fresh dice (R2), each of `trials / batches`
//! trials, plays chosen at 0 ply (the static evaluator's best play, what the cubeless
//! engine plays), a trial ending at the end of the game or at a no-contact bear-off
//! with the exact database; seed of batch `k` of variant `v`: a mix of the seed, `v`
//! and `k`. The five probabilities are the mean over the batches of each batch's
//! unbiased mean ([`crate::eval::rollout::RolloutReport::mean`]: win − win mars,
//! win mars, 1 − win − draw − lose mars, lose mars, draw), their standard errors the
//! standard deviation of the batch means over √batches (batch means, so that the
//! errors of the derived singles and of the stratified dice are counted right).

use super::table::{Distributions, GameDistribution, VariantDistribution, DISTRIBUTIONS_FORMAT};
use crate::eval::engine::Engine;
use crate::eval::rollout::{rollout, Luck, RolloutConfig};
use crate::eval::{EvalError, StopWhen};
use crate::rules::{Position, RulesError, Side, Variant};
use crate::train::mix;
use std::ops::ControlFlow;

/// Settings of a measurement.
#[derive(Clone, Debug, PartialEq)]
pub struct MeasureConfig {
    /// Trials per variant, a multiple of `batches` (at least 2 batches).
    pub trials: u64,
    /// Independent rollouts per variant (for the standard errors), at least 2.
    pub batches: u32,
    /// Master seed.
    pub seed: u64,
    /// The rollouts' luck adjustment. [`Luck::Off`] by default: at 0 ply the
    /// adjustment costs more CPU than it saves (docs/match-equity.md).
    pub luck: Luck,
    /// Worker threads of each rollout (0: one per core).
    pub threads: usize,
}

impl Default for MeasureConfig {
    /// 518,400 trials per variant (400 × 36²) in 40 batches, seed 1, no luck
    /// adjustment, every core: the committed file.
    fn default() -> Self {
        MeasureConfig {
            trials: 518_400,
            batches: 40,
            seed: 1,
            luck: Luck::Off,
            threads: 0,
        }
    }
}

/// Measures the three distributions (module documentation); `progress(variant,
/// batches done)` is called after each batch. `command` is recorded in the result.
/// Errors: field `trials` unless a positive multiple of `batches` with at most
/// `u32::MAX` trials per batch, `batches` below 2; [`EvalError::Unavailable`] when a
/// variant has no static evaluator.
pub fn measure(
    engine: &Engine,
    cfg: &MeasureConfig,
    command: &str,
    progress: &mut dyn FnMut(Variant, u32),
) -> Result<Distributions, EvalError> {
    if cfg.batches < 2 {
        return Err(RulesError::invalid("batches", "at least 2 batches").into());
    }
    let per_batch = cfg.trials / cfg.batches as u64;
    if cfg.trials == 0
        || !cfg.trials.is_multiple_of(cfg.batches as u64)
        || per_batch > u32::MAX as u64
    {
        return Err(RulesError::invalid(
            "trials",
            format!(
                "must be a positive multiple of the {} batches, at most {} per batch, got {}",
                cfg.batches,
                u32::MAX,
                cfg.trials
            ),
        )
        .into());
    }
    let mut variants = Vec::new();
    for (vi, variant) in Variant::ALL.into_iter().enumerate() {
        let Some(eval) = engine.static_evaluator(variant) else {
            return Err(EvalError::Unavailable(format!(
                "no static evaluator for {variant}"
            )));
        };
        let start = Position::start(variant, Side::White);
        let mut batches = Vec::with_capacity(cfg.batches as usize);
        for k in 0..cfg.batches {
            let rc = RolloutConfig {
                plies: 0,
                trials: per_batch as u32,
                seed: mix(cfg.seed ^ mix(((vi as u64) << 32) | k as u64)),
                truncation: None,
                luck: cfg.luck,
                exact_bearoff: true,
                threads: cfg.threads,
                report_every: 0,
                first_trial: 0,
            };
            let r = rollout(engine, &start, None, &rc, StopWhen::default(), &mut |_| {
                ControlFlow::Continue(())
            })?;
            let m = r.mean;
            let (win, wm, lm, draw) = (
                m.win as f64,
                m.win_mars as f64,
                m.lose_mars as f64,
                m.draw as f64,
            );
            batches.push([win - wm, wm, 1.0 - win - draw - lm, lm, draw]);
            progress(variant, k + 1);
        }
        let (mean, se) = mean_and_error(&batches);
        variants.push(VariantDistribution {
            variant: variant.name().to_string(),
            evaluator: eval.name(variant),
            plies: 0,
            trials: cfg.trials,
            probabilities: consistent(variant, mean),
            standard_errors: from_array(se),
        });
    }
    Ok(Distributions {
        format: DISTRIBUTIONS_FORMAT.to_string(),
        source: format!(
            "rollouts of each variant's starting position, the starter to roll (R2), plays \
             at 0 ply by the committed nets, no cube, trials ending at the game's end or \
             at a no-contact bear-off (exact database); {} batches of {} trials per \
             variant, luck adjustment {:?}, seed {}; mean and standard error of the batch \
             means (src/matchequity/measure.rs)",
            cfg.batches, per_batch, cfg.luck, cfg.seed
        ),
        command: command.to_string(),
        variants,
    })
}

/// The mean of each of the five components and its standard error.
fn mean_and_error(batches: &[[f64; 5]]) -> ([f64; 5], [f64; 5]) {
    let n = batches.len() as f64;
    let mean: [f64; 5] = std::array::from_fn(|j| batches.iter().map(|b| b[j]).sum::<f64>() / n);
    let se = std::array::from_fn(|j| {
        let var = batches
            .iter()
            .map(|b| (b[j] - mean[j]).powi(2))
            .sum::<f64>()
            / (n - 1.0);
        (var / n).sqrt()
    });
    (mean, se)
}

fn from_array(a: [f64; 5]) -> GameDistribution {
    GameDistribution {
        win_single: a[0],
        win_mars: a[1],
        lose_single: a[2],
        lose_mars: a[3],
        draw: a[4],
    }
}

/// The measured means as a distribution [`GameDistribution::validate`] accepts: a
/// draw exactly 0 outside Plakoto (the rollout cannot draw there), each value at least
/// 0, and the lose single the rest up to 1 (sums of `f32` means are off by ~1e-8).
fn consistent(variant: Variant, m: [f64; 5]) -> GameDistribution {
    let mut d = from_array(m.map(|x| x.max(0.0)));
    if variant != Variant::Plakoto {
        d.draw = 0.0;
    }
    d.lose_single = (1.0 - d.win_single - d.win_mars - d.lose_mars - d.draw).max(0.0);
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_means_and_errors() {
        let b = [[0.5, 0.1, 0.3, 0.1, 0.0], [0.3, 0.1, 0.5, 0.1, 0.0]];
        let (m, se) = mean_and_error(&b);
        assert_eq!(m, [0.4, 0.1, 0.4, 0.1, 0.0]);
        // sd of {0.5, 0.3} is 0.1 * sqrt(2); over sqrt(2): 0.1.
        assert!((se[0] - 0.1).abs() < 1e-12 && (se[2] - 0.1).abs() < 1e-12);
        assert_eq!(se[1], 0.0);
    }

    #[test]
    fn bad_settings_name_their_field() {
        let engine = Engine::with_evaluators(None, None, None);
        let field = |cfg: MeasureConfig| match measure(&engine, &cfg, "", &mut |_, _| {}) {
            Err(EvalError::Rules(RulesError::Invalid { field, .. })) => field,
            other => panic!("{other:?}"),
        };
        let c = MeasureConfig::default();
        assert_eq!(
            field(MeasureConfig {
                batches: 1,
                ..c.clone()
            }),
            "batches"
        );
        assert_eq!(
            field(MeasureConfig {
                trials: 41,
                ..c.clone()
            }),
            "trials"
        );
        assert_eq!(
            field(MeasureConfig {
                trials: 0,
                ..c.clone()
            }),
            "trials"
        );
        assert!(matches!(
            measure(&engine, &c, "", &mut |_, _| {}),
            Err(EvalError::Unavailable(_))
        ));
    }
}
